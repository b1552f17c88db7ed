import type { LongTermMemoryStore, MemorySubject } from '@agent/memory';
import { clockPast } from './wait-for';

/** A backend under test. */
export interface LongTermMemoryStoreHarness {
  store: LongTermMemoryStore;
  close(): Promise<void>;
}

let counter = 0;
function subject(overrides: Partial<MemorySubject> = {}): MemorySubject {
  return {
    tenant_id: 'acme',
    agent_id: 'telecom_contas',
    subject_key: `user-${process.pid}-${Date.now().toString(36)}-${counter++}`,
    ...overrides,
  };
}

const source = { session_id: 's-1', message_id: 'm-1', metadata: { extractor: 'test' } };

/**
 * What every adapter of the long-term memory store port must do (libs/memory/src/long-term-memory.store.ts): upsert
 * by (tenant, agent, subject, category, key), keep subjects, agents and tenants apart, search by confidence then
 * recency, and purge by subject or by session.
 */
export function describeLongTermMemoryStoreContract(
  name: string,
  open: () => Promise<LongTermMemoryStoreHarness> | LongTermMemoryStoreHarness,
): void {
  describe(`long-term memory store contract: ${name}`, () => {
    let harness: LongTermMemoryStoreHarness;
    let store: LongTermMemoryStore;

    beforeAll(async () => {
      harness = await open();
      store = harness.store;
    }, 180000);

    afterAll(() => harness?.close());

    it('upserts on (tenant, agent, subject, category, key), keeping id and created_at', async () => {
      const who = subject();
      expect(
        await store.upsert(
          who,
          [{ category: 'profile', key: 'preferred_name', value: 'Ana', confidence: 0.8 }],
          source,
        ),
      ).toBe(1);
      const [first] = await store.search(who, { limit: 10, minConfidence: 0 });
      await clockPast(first.updated_at);
      await store.upsert(
        who,
        [{ category: 'profile', key: 'preferred_name', value: 'Aninha', confidence: 0.95 }],
        { session_id: 's-2', message_id: 'm-9', metadata: { extractor: 'again' } },
      );
      const items = await store.search(who, { limit: 10, minConfidence: 0 });
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        memory_id: first.memory_id,
        value: 'Aninha',
        confidence: 0.95,
        source_session_id: 's-2',
        source_message_id: 'm-9',
        metadata: { extractor: 'again' },
      });
      expect(items[0].created_at.getTime()).toBe(first.created_at.getTime());
      expect(items[0].updated_at.getTime()).toBeGreaterThan(first.updated_at.getTime());
    });

    it('keeps subjects, agents and tenants apart', async () => {
      const who = subject();
      const fact = { category: 'profile', key: 'preferred_name', value: 'Ana', confidence: 0.9 };
      await store.upsert(who, [fact], source);
      await store.upsert({ ...who, tenant_id: 'globex' }, [{ ...fact, value: 'Globex Ana' }], source);
      await store.upsert({ ...who, agent_id: 'retail_orders' }, [{ ...fact, value: 'Retail Ana' }], source);
      expect((await store.search(who, { limit: 10, minConfidence: 0 })).map((i) => i.value)).toEqual(['Ana']);
      expect(
        (await store.search({ ...who, tenant_id: 'globex' }, { limit: 10, minConfidence: 0 })).map(
          (i) => i.value,
        ),
      ).toEqual(['Globex Ana']);
      expect(
        await store.search(
          { ...who, subject_key: `${who.subject_key}-other` },
          { limit: 10, minConfidence: 0 },
        ),
      ).toEqual([]);
    });

    it('searches by confidence then recency, above the minimum, up to the limit', async () => {
      const who = subject();
      await store.upsert(who, [{ category: 'other', key: 'old_high', value: 'a', confidence: 0.9 }], source);
      await store.upsert(who, [{ category: 'other', key: 'low', value: 'b', confidence: 0.5 }], source);
      const written = await store.search(who, { limit: 10, minConfidence: 0 });
      await clockPast(new Date(Math.max(...written.map((item) => item.updated_at.getTime()))));
      await store.upsert(who, [{ category: 'other', key: 'new_high', value: 'c', confidence: 0.9 }], source);
      await store.upsert(who, [{ category: 'other', key: 'top', value: 'd', confidence: 0.99 }], source);
      const keys = async (limit: number, minConfidence: number) =>
        (await store.search(who, { limit, minConfidence })).map((item) => item.key);
      expect(await keys(10, 0.7)).toEqual(['top', 'new_high', 'old_high']);
      expect(await keys(2, 0.7)).toEqual(['top', 'new_high']);
      expect(await keys(10, 0)).toEqual(['top', 'new_high', 'old_high', 'low']);
    });

    it('takes the last of duplicate facts in one batch and purges a subject', async () => {
      const who = subject();
      const written = await store.upsert(
        who,
        [
          { category: 'contact', key: 'channel', value: 'phone', confidence: 0.8 },
          { category: 'contact', key: 'channel', value: 'email', confidence: 0.9 },
          { category: 'profile', key: 'preferred_name', value: 'Ana', confidence: 0.9 },
        ],
        source,
      );
      expect(written).toBe(2);
      const other = subject();
      await store.upsert(other, [{ category: 'profile', key: 'x', value: 'y', confidence: 1 }], source);
      expect(
        (await store.search(who, { limit: 10, minConfidence: 0 })).find((i) => i.key === 'channel')?.value,
      ).toBe('email');
      expect(await store.purgeSubject(who)).toBe(2);
      expect(await store.search(who, { limit: 10, minConfidence: 0 })).toEqual([]);
      expect(await store.search(other, { limit: 10, minConfidence: 0 })).toHaveLength(1);
    });

    it("purges a subject of one agent, or of every agent of the tenant, and nobody else's", async () => {
      const who = subject();
      const fact = { category: 'profile', key: 'preferred_name', value: 'Ana', confidence: 0.9 };
      await store.upsert(who, [fact], source);
      await store.upsert({ ...who, agent_id: 'retail_orders' }, [fact], source);
      await store.upsert({ ...who, agent_id: 'travel' }, [fact], source);
      await store.upsert({ ...who, tenant_id: 'globex' }, [fact], source);
      const count = async (overrides: Partial<MemorySubject>) =>
        (await store.search({ ...who, ...overrides }, { limit: 10, minConfidence: 0 })).length;
      expect(await store.purgeSubject({ ...who, agent_id: 'retail_orders' })).toBe(1);
      expect(await count({ agent_id: 'retail_orders' })).toBe(0);
      expect(await count({})).toBe(1);
      expect(await store.purgeSubject({ ...who, agent_id: null })).toBe(2);
      expect([await count({}), await count({ agent_id: 'travel' })]).toEqual([0, 0]);
      expect(await count({ tenant_id: 'globex' })).toBe(1);
    });

    it('purges the items whose latest source is a session', async () => {
      const who = subject();
      const session = `session-${counter++}`;
      await store.upsert(who, [{ category: 'profile', key: 'a', value: '1', confidence: 0.9 }], {
        ...source,
        session_id: session,
      });
      await store.upsert(who, [{ category: 'profile', key: 'b', value: '2', confidence: 0.9 }], {
        ...source,
        session_id: session,
      });
      // `b` is restated by a later session: it is that session's now.
      await store.upsert(who, [{ category: 'profile', key: 'b', value: '3', confidence: 0.9 }], {
        ...source,
        session_id: `${session}-later`,
      });
      expect(
        await store.purgeSession({
          tenant_id: who.tenant_id,
          agent_id: 'retail_orders',
          session_id: session,
        }),
      ).toBe(0);
      expect(
        await store.purgeSession({ tenant_id: who.tenant_id, agent_id: who.agent_id, session_id: session }),
      ).toBe(1);
      expect((await store.search(who, { limit: 10, minConfidence: 0 })).map((i) => [i.key, i.value])).toEqual(
        [['b', '3']],
      );
    });
  });
}
