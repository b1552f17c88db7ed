import { Column, DataSource, Entity, Index } from 'typeorm';
import { CHECKPOINT_ENTITIES, ProcessedMessageEntity } from '@agent/checkpoint';
import { buildDataSourceOptions, runMigrationsExclusively } from '@agent/database';
import { EVENTS_ENTITIES } from '@agent/events';
import { MEMORY_ENTITIES } from '@agent/memory';
import { RAG_ENTITIES, RagChunkEmbeddingEntity } from '@agent/rag';
import { ownEmbeddedServer } from '../support/embedded-servers';

/**
 * The schema-drift check: on a database migrated with migrations/, the SQL TypeORM would generate from the
 * entities (what `migration:generate` writes) is empty. A change to an entity without a migration, or to a
 * migration without the entity, fails here. Runs on the embedded default (pgvector included) and on DATABASE_URL.
 */
type EntityClass = new () => object;

interface Backend {
  name: string;
  open(): Promise<{ url: string; embedded: boolean; close(): Promise<void> }>;
}

const backends: Backend[] = [{ name: 'embedded PGlite', open: () => ownEmbeddedServer('schema-drift-') }];
const DATABASE_URL = process.env.DATABASE_URL;
if (DATABASE_URL) {
  backends.push({
    name: 'Postgres (DATABASE_URL)',
    open: () => Promise.resolve({ url: DATABASE_URL, embedded: false, close: () => Promise.resolve() }),
  });
} else {
  describe('schema drift on Postgres', () => {
    it.skip('needs DATABASE_URL (CI sets it); only the embedded backend ran', () => undefined);
  });
}

/** ProcessedMessageEntity changed the way an entity edited without a migration would be. */
@Entity({ name: 'processed_messages' })
@Index('processed_messages_turn_idx', ['turn'])
class DriftedProcessedMessage extends ProcessedMessageEntity {
  // A column and (above) an index that no migration creates.
  @Column({ type: 'text', nullable: true })
  channel!: string | null;
}

describe.each(backends)('schema drift on $name', (backend) => {
  let database: { url: string; embedded: boolean; close(): Promise<void> };
  let entities: EntityClass[];

  /** The SQL that would bring the database to `entities`: empty when entities and migrations agree. */
  async function pendingSql(list: EntityClass[]): Promise<string[]> {
    const dataSource = new DataSource({
      ...buildDataSourceOptions({ url: database.url, poolSize: 1, embedded: database.embedded }),
      entities: list,
    });
    await dataSource.initialize();
    try {
      const sql = await dataSource.driver.createSchemaBuilder().log();
      return sql.upQueries.map((query) => query.query);
    } finally {
      await dataSource.destroy();
    }
  }

  beforeAll(async () => {
    database = await backend.open();
    const dataSource = new DataSource(
      buildDataSourceOptions({ url: database.url, poolSize: 1, embedded: database.embedded }),
    );
    await dataSource.initialize();
    try {
      await runMigrationsExclusively(dataSource, 0);
      const [vector]: { present: boolean }[] = await dataSource.query(
        `SELECT to_regclass('rag_chunk_embeddings') IS NOT NULL AS present`,
      );
      // The embeddings table exists only where pgvector does (the embedded default has it).
      const all: EntityClass[] = [
        ...CHECKPOINT_ENTITIES,
        ...MEMORY_ENTITIES,
        ...RAG_ENTITIES,
        ...EVENTS_ENTITIES,
      ];
      entities = vector.present ? all : all.filter((entity) => entity !== RagChunkEmbeddingEntity);
      if (database.embedded) expect(vector.present).toBe(true);
    } finally {
      await dataSource.destroy();
    }
  }, 180000);

  afterAll(async () => {
    await database?.close();
  });

  it('finds nothing to generate: the entities describe exactly what the migrations create', async () => {
    // TypeORM has no xid8 type, so the earlier relay's xid8 columns on tables that have entities
    // (turn_log.commit_xid and its index, the destinations' watermark), kept for its replicas during a rolling
    // deploy, cannot be entity columns; what TypeORM would drop for lack of them is the one expected difference.
    const unexpressible = [
      'DROP INDEX "public"."turn_log_commit_xid_idx"',
      'ALTER TABLE "turn_log" DROP COLUMN "commit_xid"',
      'ALTER TABLE "event_relay_destinations" DROP COLUMN "watermark"',
    ];
    expect((await pendingSql(entities)).filter((sql) => !unexpressible.includes(sql))).toEqual([]);
  });

  it('fails when an entity and the migrations disagree', async () => {
    const sql = await pendingSql(
      entities.map((entity) => (entity === ProcessedMessageEntity ? DriftedProcessedMessage : entity)),
    );
    expect(sql).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/ALTER TABLE "processed_messages" ADD "channel" text/),
        expect.stringMatching(
          /CREATE INDEX "processed_messages_turn_idx" ON "processed_messages" \("turn"\)/,
        ),
      ]),
    );
  });
});
