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
    failedRuns: (conversationKey) =>
      Promise.resolve(
        [...(store.tables.failures.get(conversationKey)?.values() ?? [])].sort(
          (a, b) => a.version - b.version || a.attempt - b.attempt,
        ),
      ),
    backdate: (conversationKey, days, tables = ['turn_log', 'processed_messages']) => {
      const rows = [
        ...(tables.includes('turn_log') ? (store.tables.turnLog.get(conversationKey)?.values() ?? []) : []),
        ...(tables.includes('processed_messages')
          ? (store.tables.processed.get(conversationKey)?.values() ?? [])
          : []),
        ...(tables.includes('turn_failures')
          ? (store.tables.failures.get(conversationKey)?.values() ?? [])
          : []),
      ];
      for (const row of rows) row.created_at = new Date(row.created_at.getTime() - days * DAY_MS);
      return Promise.resolve();
    },
    storeEarlierRecord: (conversationKey, messageId, response) => {
      let records = store.tables.processed.get(conversationKey);
      if (!records) {
        records = new Map();
        store.tables.processed.set(conversationKey, records);
      }
      records.set(messageId, {
        conversation_key: conversationKey,
        message_id: messageId,
        turn: 1,
        version: null,
        response,
        fingerprint: null,
        created_at: new Date(),
      });
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  });
});
