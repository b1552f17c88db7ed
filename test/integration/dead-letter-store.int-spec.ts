import { randomUUID } from 'node:crypto';
import { createDataSource, DatabaseService, runMigrationsExclusively } from '@agent/database';
import { DeadLetterEntity, DeadLetterStore, DeliveryAttemptEntity, EVENTS_ENTITIES } from '@agent/events';

/**
 * The dead-letter store on Postgres: a letter is kept while the row that held its event exists, a commit's turn
 * log row or a failed run's record (the only row of a failure on a conversation's first turn, version 0), and
 * dropped when its conversation is gone.
 */
const url = process.env.DATABASE_URL;
const describeOnPostgres = url ? describe : describe.skip;

describeOnPostgres('the dead-letter store on Postgres', () => {
  let database: DatabaseService;
  let store: DeadLetterStore;

  beforeAll(async () => {
    const dataSource = await createDataSource({
      url: url ?? '',
      poolSize: 2,
      embedded: false,
      entities: EVENTS_ENTITIES,
    });
    await runMigrationsExclusively(dataSource, 0);
    database = new DatabaseService(dataSource, null);
    store = new DeadLetterStore(
      database,
      dataSource.getRepository(DeadLetterEntity),
      dataSource.getRepository(DeliveryAttemptEntity),
    );
  });

  afterAll(() => database.onApplicationShutdown());

  function letter(conversationKey: string, version: number): Parameters<DeadLetterStore['record']>[0] {
    const eventId = `${conversationKey}:${version}.1:0`;
    return {
      destination: 'dead-letter-store-spec',
      tenant_id: 'acme',
      conversation_key: conversationKey,
      version,
      event_id: eventId,
      event_name: 'NOC.005',
      body: { id: eventId, type: 'NOC.005', timestamp: new Date().toISOString(), data: {} },
      attempts: 3,
      last_error: 'HTTP 500',
    };
  }

  async function lettersOf(conversationKey: string): Promise<DeadLetterEntity[]> {
    return database.dataSource.getRepository(DeadLetterEntity).findBy({ conversation_key: conversationKey });
  }

  it("keeps the letter of a failure on a conversation's first turn (version 0, no turn log row)", async () => {
    const conversationKey = `acme:dead-letter-${randomUUID()}`;
    await database.dataSource.query(
      `INSERT INTO turn_failures (conversation_key, version, attempt, turn, tenant_id, agent_id, events)
       VALUES ($1, 0, 1, 1, 'acme', 'default', '[]')`,
      [conversationKey],
    );
    await store.record(letter(conversationKey, 0));
    const letters = await lettersOf(conversationKey);
    expect(letters.map((row) => [row.event_name, row.attempts, row.last_error])).toEqual([
      ['NOC.005', 3, 'HTTP 500'],
    ]);
    await store.deleteConversation(conversationKey);
  });

  it('records nothing for a conversation purged while its event was retried', async () => {
    const conversationKey = `acme:dead-letter-${randomUUID()}`;
    await store.record(letter(conversationKey, 0));
    expect(await lettersOf(conversationKey)).toEqual([]);
  });
});
