import { DataSource, EntityManager, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DatabaseService, DatabaseUnavailableError } from '@agent/database';
import { PostgresCheckpointStore } from './postgres-checkpoint.store';

describe('PostgresCheckpointStore transactions', () => {
  function storeWhoseConnectionDiesAfter(statements: number) {
    let executed = 0;
    const manager = {
      query: () => {
        executed++;
        // What TypeORM throws when the connection emitted an error between two statements of a transaction.
        if (executed > statements) return Promise.reject(new QueryRunnerProviderAlreadyReleasedError());
        return Promise.resolve([[], 1]);
      },
    } as unknown as EntityManager;
    const dataSource = {
      transaction: (work: (m: EntityManager) => Promise<unknown>) => work(manager),
    } as unknown as DataSource;
    return new PostgresCheckpointStore(new DatabaseService(dataSource, null));
  }

  it('reports a connection lost between statements as DatabaseUnavailableError (retried, then 503)', async () => {
    const store = storeWhoseConnectionDiesAfter(1);
    const commit = store.commitTurn(
      {
        identity: { conversation_key: 't:s', tenant_id: 't', session_id: 's', agent_id: 'a' },
        leaseToken: 'x:1',
        parentVersion: null,
        turn: 1,
        state: {},
        status: 'active',
        events: [],
      },
      { expectedHead: 0, checksum: 'c', serializedState: '{}' },
    );
    await expect(commit).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(storeWhoseConnectionDiesAfter(2).deleteConversation('t:s')).rejects.toBeInstanceOf(
      DatabaseUnavailableError,
    );
  });
});
