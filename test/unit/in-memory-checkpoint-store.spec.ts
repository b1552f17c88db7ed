import { describeCheckpointStoreContract } from '../support/checkpoint-store-contract';
import { InMemoryCheckpointStore } from '../support/in-memory-checkpoint-store';

const DAY_MS = 86_400_000;

describeCheckpointStoreContract('InMemoryCheckpointStore', () => {
  const store = new InMemoryCheckpointStore();
  return Promise.resolve({
    store,
    turnLog: (conversationKey) =>
      Promise.resolve(
        [...(store.tables.turnLog.get(conversationKey)?.values() ?? [])].sort(
          (a, b) => a.version - b.version,
        ),
      ),
    backdate: (conversationKey, days) => {
      const rows = [
        ...(store.tables.turnLog.get(conversationKey)?.values() ?? []),
        ...(store.tables.processed.get(conversationKey)?.values() ?? []),
      ];
      for (const row of rows) row.created_at = new Date(row.created_at.getTime() - days * DAY_MS);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  });
});
