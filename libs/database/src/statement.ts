import type { QueryResultRow } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';

/** A statement run on every turn, under a name unique in the process. */
export interface NamedStatement {
  name: string;
  text: string;
}

/** The row of a statement that returns none (or whose rows nobody reads). */
export type NoRows = Record<string, never>;

/**
 * A statement of a store's catalogue with the types of its parameters and of its rows: declared once, next to its
 * SQL, so no call site states what a query returned.
 */
export interface Statement<
  Params extends readonly unknown[],
  Row extends QueryResultRow,
> extends NamedStatement {
  /** Never set: carries the parameter and row types from the catalogue to the call. */
  readonly types?: (params: Params) => Row;
}

export function statement<Params extends readonly unknown[], Row extends QueryResultRow = NoRows>(
  name: string,
  text: string,
): Statement<Params, Row> {
  return { name, text };
}

/**
 * Runs a catalogue statement through TypeORM (unnamed, no time limit of its own): for a store that works on a data
 * source outside the app (the command-line tools) or inside a transaction's entity manager. A SELECT or an INSERT
 * only: TypeORM answers an UPDATE or a DELETE with [rows, count].
 */
export async function runOn<Params extends readonly unknown[], Row extends QueryResultRow>(
  queryable: DataSource | EntityManager,
  statement: Statement<Params, Row>,
  params: Params,
): Promise<Row[]> {
  // TypeORM types every answer as `any`: the catalogue's row type is the statement's contract.
  const rows: Row[] = await queryable.query(statement.text, [...params]);
  return rows;
}
