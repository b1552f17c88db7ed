import type { DataSource } from 'typeorm';
import type { AgentState } from '@agent/contracts';

interface KeyedTable {
  table: string;
  column: 'tenant_id' | 'conversation_key';
}

const tablesBySource = new WeakMap<DataSource, Promise<KeyedTable[]>>();

/** Every table of the schema with a tenant_id or conversation_key column (read from the catalogue, so new tables count). */
function keyedTables(dataSource: DataSource): Promise<KeyedTable[]> {
  let tables = tablesBySource.get(dataSource);
  if (!tables) {
    tables = dataSource.query(
      `SELECT table_name AS table, column_name AS column FROM information_schema.columns
        WHERE table_schema = current_schema() AND column_name IN ('tenant_id', 'conversation_key')
        ORDER BY table_name, column_name`,
    );
    tablesBySource.set(dataSource, tables);
  }
  return tables;
}

/** Rows by table matching a tenant (tenant_id, or a conversation_key of that tenant) or one conversation. */
async function countRows(
  dataSource: DataSource,
  where: { tenantId: string } | { conversationKey: string },
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { table, column } of await keyedTables(dataSource)) {
    let sql: string;
    let value: string;
    if ('conversationKey' in where) {
      if (column !== 'conversation_key') continue;
      sql = `SELECT count(*) AS n FROM "${table}" WHERE conversation_key = $1`;
      value = where.conversationKey;
    } else {
      sql =
        column === 'tenant_id'
          ? `SELECT count(*) AS n FROM "${table}" WHERE tenant_id = $1`
          : `SELECT count(*) AS n FROM "${table}" WHERE starts_with(conversation_key, $1 || ':')`;
      value = where.tenantId;
    }
    const [row]: { n: string }[] = await dataSource.query(sql, [value]);
    if (Number(row.n) > 0) counts[`${table}.${column}`] = Number(row.n);
  }
  return counts;
}

/** Rows stored for a tenant, by table: empty when nothing that named this tenant was written. */
export function rowsForTenant(dataSource: DataSource, tenantId: string): Promise<Record<string, number>> {
  return countRows(dataSource, { tenantId });
}

/** Rows stored for one conversation (`tenant:session`), by table: empty when a refused request wrote nothing. */
export function rowsForConversation(
  dataSource: DataSource,
  conversationKey: string,
): Promise<Record<string, number>> {
  return countRows(dataSource, { conversationKey });
}

/** The state of a conversation's newest checkpoint. */
export async function latestState(dataSource: DataSource, conversationKey: string): Promise<AgentState> {
  const rows: { state: AgentState }[] = await dataSource.query(
    'SELECT state::jsonb AS state FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
    [conversationKey],
  );
  return rows[0].state;
}

export interface StoredEventRow {
  name: string;
  turn: number;
  payload: Record<string, unknown>;
}

/** A conversation's stored events, in emission order. */
export function storedEvents(dataSource: DataSource, conversationKey: string): Promise<StoredEventRow[]> {
  return dataSource.query(
    'SELECT name, turn, payload FROM session_events WHERE conversation_key = $1 ORDER BY id',
    [conversationKey],
  );
}
