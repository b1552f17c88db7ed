import {
  CheckpointFencingError,
  CheckpointRow,
  CheckpointStore,
  ConversationIdentity,
  InvalidCursorError,
  readCheckpoint,
  RetainedTable,
  serializeCheckpoint,
  TurnCommit,
  turnSummary,
} from '@agent/checkpoint';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import { eventually } from './wait-for';

/** One turn log row as stored (the columns the contract reads). */
export interface StoredTurnLogRow {
  version: number;
  turn: number;
  summary: unknown;
  events: unknown;
}

/** One failed run as stored (the columns the contract reads). */
export interface StoredFailedRun {
  version: number;
  attempt: number;
  turn: number;
  events: unknown;
}

/** A backend under test, with what a test needs to reach behind the store's port. */
export interface CheckpointStoreHarness {
  store: CheckpointStore;
  /** The conversation's turn log rows, oldest first. */
  turnLog(conversationKey: string): Promise<StoredTurnLogRow[]>;
  /** The conversation's failed runs, in their order. */
  failedRuns(conversationKey: string): Promise<StoredFailedRun[]>;
  /** Moves the creation time of the conversation's rows in `tables` (both by default) `days` back. */
  backdate(conversationKey: string, days: number, tables?: RetainedTable[]): Promise<void>;
  /** Stores an idempotency record the way releases before the response moved to the turn log did. */
  storeEarlierRecord(
    conversationKey: string,
    messageId: string,
    response: Record<string, unknown>,
  ): Promise<void>;
  close(): Promise<void>;
}

let counter = 0;
function identity(tenant = 'contract'): ConversationIdentity {
  const session = `c-${process.pid}-${Date.now().toString(36)}-${counter++}`;
  return {
    conversation_key: conversationKeyOf(tenant, session),
    tenant_id: tenant,
    session_id: session,
    agent_id: 'telecom_contas',
    user_id: 'u-1',
    channel: 'web',
  };
}

/** The write of a commit; `keep` (the versions kept) is high enough by default that nothing is compacted. */
function writeFor(state: AgentState, expectedHead: number, parentVersion: number | null, keep = 1000) {
  const { text, checksum } = serializeCheckpoint(state, parentVersion);
  return { expectedHead, serializedState: text, checksum, keep };
}

const stateOf = (row: CheckpointRow | null): unknown => (row ? JSON.parse(row.state_text) : null);

/** The fields every published payload carries for its conversation and turn. */
function envelopeOf(who: ConversationIdentity, turn: number) {
  const { tenant_id, agent_id, session_id, conversation_key } = who;
  return { tenant_id, agent_id, session_id, conversation_key, turn };
}

function turnCommit(
  who: ConversationIdentity,
  token: string,
  turn: number,
  state: AgentState,
  extra: Partial<TurnCommit> = {},
): TurnCommit {
  return {
    identity: who,
    leaseToken: token,
    parentVersion: turn > 1 ? turn - 1 : null,
    turn,
    state,
    status: 'active',
    events: [],
    ...extra,
  };
}

/**
 * The contract of the CheckpointStore port (see checkpoint.store.ts), one suite for every implementation:
 * PostgresCheckpointStore in the integration tests, InMemoryCheckpointStore in the unit tests. Conversations are
 * unique per test, so the suite shares a database with other suites.
 */
export function describeCheckpointStoreContract(
  name: string,
  open: () => Promise<CheckpointStoreHarness>,
): void {
  describe(`CheckpointStore contract on ${name}`, () => {
    let harness: CheckpointStoreHarness;
    let store: CheckpointStore;

    // PGlite takes seconds to create, more on a busy machine.
    beforeAll(async () => {
      harness = await open();
      store = harness.store;
    }, 180000);

    afterAll(async () => {
      await harness?.close();
    });

    /** The session row when the lease was taken, null while another holder has it. */
    async function take(who: ConversationIdentity, token: string, leaseMs: number, reclaimPrefix?: string) {
      return (await store.acquireLease(who, { token, leaseMs, reclaimPrefix })).session;
    }

    /** Commits `turns` turns, each under the lease (a commit releases it), and takes it again; returns the token. */
    async function seed(who: ConversationIdentity, turns: number, token = 'seed:1'): Promise<string> {
      for (let turn = 1; turn <= turns; turn++) {
        expect(await take(who, token, 60000)).not.toBeNull();
        const state: AgentState = { user_text: `message ${turn}`, turn };
        const parent = turn > 1 ? turn - 1 : null;
        await store.commitTurn(turnCommit(who, token, turn, state), writeFor(state, turn - 1, parent));
      }
      expect(await take(who, token, 60000)).not.toBeNull();
      return token;
    }

    it('knows nothing about a conversation that never ran', async () => {
      const who = identity();
      expect(await store.latestVersions(who.conversation_key, 5)).toEqual([]);
      expect(await store.getVersion(who.conversation_key, 1)).toBeNull();
      expect(await store.listVersions(who.conversation_key)).toEqual([]);
      expect(await store.getSession(who.conversation_key)).toBeNull();
      expect(await store.findProcessedMessage(who.conversation_key, 'm-1')).toBeNull();
      expect(await store.listEvents(who.conversation_key)).toEqual([]);
    });

    describe('lease', () => {
      it('creates the session row with the lease, and refuses another holder until released', async () => {
        const who = identity();
        const session = await take(who, 'a:1', 60000);
        expect(session).toMatchObject({
          conversation_key: who.conversation_key,
          tenant_id: who.tenant_id,
          session_id: who.session_id,
          agent_id: who.agent_id,
          status: 'active',
          turn_count: 0,
          head_version: 0,
          lease_owner: 'a:1',
        });
        expect(await take(who, 'b:1', 60000)).toBeNull();
        // Re-entrant for the same token.
        expect(await take(who, 'a:1', 60000)).not.toBeNull();
        await store.releaseLease(who.conversation_key, 'b:1');
        expect(await take(who, 'b:1', 60000)).toBeNull();
        await store.releaseLease(who.conversation_key, 'a:1');
        expect((await take(who, 'b:1', 60000))?.lease_owner).toBe('b:1');
      });

      it('lets anyone take an expired lease, so a crashed holder blocks at most the lease duration', async () => {
        const who = identity();
        await take(who, 'crashed:1', 60000);
        expect(await take(who, 'b:1', 60000)).toBeNull();
        // Its last renewal was for 1 ms and it never renewed again: however slow the machine, the lease is over
        // once that millisecond has passed (a short lease taken above could run out before the refusal).
        expect(await store.renewLease(who.conversation_key, 'crashed:1', 1)).toBe(true);
        const taken = await eventually(
          'the expired lease to be taken',
          async () => (await take(who, 'b:1', 60000)) ?? undefined,
          5000,
        );
        expect(taken.lease_owner).toBe('b:1');
      });

      it('renews only for the holder', async () => {
        const who = identity();
        const control = identity();
        await take(who, 'a:1', 150);
        // Taken after it for as long and never renewed: once this one has expired, so would have the first.
        await take(control, 'a:1', 150);
        expect(await store.renewLease(who.conversation_key, 'b:1', 60000)).toBe(false);
        expect(await store.renewLease(who.conversation_key, 'a:1', 60000)).toBe(true);
        await eventually(
          'the unrenewed lease to expire',
          async () => (await take(control, 'b:1', 60000)) ?? undefined,
          5000,
        );
        // Renewed to a minute: still held.
        expect(await take(who, 'b:1', 60000)).toBeNull();
      });

      it('reads the head checkpoint with the lease', async () => {
        const who = identity();
        await seed(who, 2);
        await store.releaseLease(who.conversation_key, 'seed:1');
        const attempt = await store.acquireLease(who, { token: 'b:1', leaseMs: 60000 });
        expect(attempt.replay).toBeNull();
        expect(attempt.session).toMatchObject({ head_version: 2, turn_count: 2, lease_owner: 'b:1' });
        expect(attempt.head).toMatchObject({ version: 2, parent_version: 1, format: 2 });
        expect(stateOf(attempt.head)).toEqual({ user_text: 'message 2', turn: 2 });
      });

      it('answers a processed message with its stored response and takes no lease', async () => {
        const who = identity();
        await take(who, 'a:1', 60000);
        const state: AgentState = { user_text: 'oi' };
        await store.commitTurn(
          turnCommit(who, 'a:1', 1, state, {
            idempotency: { message_id: 'm-1', response: { answer: 'olá' }, fingerprint: 'f-1' },
          }),
          writeFor(state, 0, null),
        );
        // Even while another holder has the lease.
        await take(who, 'other:1', 60000);
        const attempt = await store.acquireLease(who, { token: 'b:1', leaseMs: 60000, messageId: 'm-1' });
        expect(attempt).toEqual({
          replay: { response: { answer: 'olá' }, fingerprint: 'f-1' },
          session: null,
          head: null,
        });
        expect((await store.getSession(who.conversation_key))?.lease_owner).toBe('other:1');
        await store.releaseLease(who.conversation_key, 'other:1');
        const fresh = await store.acquireLease(who, { token: 'b:1', leaseMs: 60000, messageId: 'm-2' });
        expect(fresh.replay).toBeNull();
        expect(fresh.session?.lease_owner).toBe('b:1');
      });

      it("reclaims a live lease only for the caller's own token prefix", async () => {
        const who = identity();
        await take(who, 'instance-a:turn-1', 60000);
        expect(await take(who, 'instance-b:turn-1', 60000, 'instance-b:')).toBeNull();
        const reclaimed = await take(who, 'instance-a:turn-2', 60000, 'instance-a:');
        expect(reclaimed?.lease_owner).toBe('instance-a:turn-2');
      });
    });

    describe('commit', () => {
      it('writes checkpoint, session row, events and idempotency record together', async () => {
        const who = identity();
        await take(who, 'a:1', 60000);
        const state: AgentState = {
          user_text: 'oi',
          final_answer: 'olá',
          active_agent: 'billing_agent',
          next_state: 'WAITING',
          route: 'billing_agent',
          intent: 'billing_invoice',
        };
        const version = await store.commitTurn(
          turnCommit(who, 'a:1', 1, state, {
            status: 'handoff',
            events: [
              { name: 'NOC.001', payload: { n: 1 }, at: new Date().toISOString() },
              { name: 'AGENT_COMPLETED', payload: { n: 2 }, at: new Date().toISOString() },
            ],
            idempotency: { message_id: 'm-1', response: { answer: 'olá', turn: 1 } },
          }),
          writeFor(state, 0, null),
        );
        expect(version).toBe(1);
        expect(await store.getSession(who.conversation_key)).toMatchObject({
          head_version: 1,
          turn_count: 1,
          status: 'handoff',
          active_agent: 'billing_agent',
          next_state: 'WAITING',
          last_route: 'billing_agent',
          last_intent: 'billing_invoice',
          user_id: 'u-1',
        });
        const row = await store.getVersion(who.conversation_key, 1);
        expect(row).toMatchObject({ version: 1, parent_version: null, format: 2 });
        expect(stateOf(row)).toEqual(state);
        expect(row?.size_bytes).toBe(Buffer.byteLength(JSON.stringify(state)));
        expect(await store.findProcessedMessage(who.conversation_key, 'm-1')).toEqual({
          response: { answer: 'olá', turn: 1 },
          fingerprint: null,
        });
        // The commit gave the lease back.
        expect((await store.getSession(who.conversation_key))?.lease_owner).toBeNull();
        const events = await store.listEvents(who.conversation_key);
        expect(events.map((e) => [e.name, e.turn, e.seq, e.payload])).toEqual([
          ['NOC.001', 1, 1, { ...envelopeOf(who, 1), n: 1 }],
          ['AGENT_COMPLETED', 1, 2, { ...envelopeOf(who, 1), n: 2 }],
        ]);
      });

      it('stores payloads without the envelope their row holds, and lists them with it', async () => {
        const who = identity();
        await take(who, 'a:1', 60000);
        const state: AgentState = { user_text: 'oi' };
        const published = [
          { ...envelopeOf(who, 1), code: 'PINJ', at: '2026-01-01T00:00:00.000Z' },
          // A payload whose envelope differs from its row's keeps its own values.
          { ...envelopeOf(who, 1), turn: 7, session_id: 'another', agent_id: null },
          { only: 'fields of its own' },
        ];
        await store.commitTurn(
          turnCommit(who, 'a:1', 1, state, {
            events: published.map((payload) => ({ name: 'GRL.002', payload, at: new Date().toISOString() })),
          }),
          writeFor(state, 0, null),
        );
        const [row] = await harness.turnLog(who.conversation_key);
        expect(row.events).toEqual([
          { name: 'GRL.002', payload: { code: 'PINJ', at: '2026-01-01T00:00:00.000Z' } },
          { name: 'GRL.002', payload: { turn: 7, session_id: 'another', agent_id: null } },
          { name: 'GRL.002', payload: { only: 'fields of its own' } },
        ]);
        expect((await store.listEvents(who.conversation_key)).map((e) => e.payload)).toEqual([
          published[0],
          published[1],
          { ...envelopeOf(who, 1), only: 'fields of its own' },
        ]);
      });

      it('stores one turn log row per commit: the summary, the events as one document, the time to first text', async () => {
        const who = identity();
        const token = await seed(who, 1);
        const state: AgentState = { user_text: 'two', route: 'billing_agent' };
        await store.commitTurn(
          turnCommit(who, token, 2, state, {
            summary: turnSummary(state, 'turn', 12.4),
            firstTextMs: 7,
            events: [
              { name: 'NOC.001', payload: { a: 1 }, at: new Date().toISOString() },
              { name: 'AGENT_COMPLETED', payload: { b: 'x\u0000' }, at: new Date().toISOString() },
            ],
          }),
          writeFor(state, 1, 1),
        );
        const rows: { version: number; turn: number; summary: unknown; events: unknown }[] =
          await harness.turnLog(who.conversation_key);
        expect(rows.map((row) => [row.version, row.turn])).toEqual([
          [1, 1],
          [2, 2],
        ]);
        expect(rows[1].summary).toMatchObject({ kind: 'turn', route: 'billing_agent', latency_ms: 12 });
        expect(rows[1].events).toEqual([
          { name: 'NOC.001', payload: { a: 1 } },
          { name: 'AGENT_COMPLETED', payload: { b: 'x\ufffd' } },
        ]);
        const events = await store.listEvents(who.conversation_key);
        expect(events.map((e) => [e.turn, e.seq, e.name, e.first_text_ms])).toEqual([
          [2, 1, 'NOC.001', 7],
          [2, 2, 'AGENT_COMPLETED', 7],
        ]);
        expect(Number(events[0].id)).toBeLessThan(Number(events[1].id));
      });

      it('keeps versions contiguous and lists them newest first', async () => {
        const who = identity();
        await seed(who, 4);
        const versions = await store.listVersions(who.conversation_key);
        expect(versions.map((v) => [v.version, v.parent_version])).toEqual([
          [4, 3],
          [3, 2],
          [2, 1],
          [1, null],
        ]);
        expect(versions[0]).not.toHaveProperty('state');
        expect(versions[0].size_bytes).toBeGreaterThan(0);
        const latest = await store.latestVersions(who.conversation_key, 2);
        expect(latest.map((r) => r.version)).toEqual([4, 3]);
        expect(stateOf(latest[0])).toEqual({ user_text: 'message 4', turn: 4 });
        const older = await store.latestVersions(who.conversation_key, 10, 3);
        expect(older.map((r) => r.version)).toEqual([2, 1]);
        expect(stateOf(await store.getVersion(who.conversation_key, 2))).toEqual({
          user_text: 'message 2',
          turn: 2,
        });
      });

      it('refuses a commit whose expected head is not the head, writing nothing', async () => {
        const who = identity();
        const token = await seed(who, 2);
        const state: AgentState = { user_text: 'stale' };
        const stale = store.commitTurn(
          turnCommit(who, token, 3, state, {
            events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
            idempotency: { message_id: 'stale', response: {} },
          }),
          writeFor(state, 1, 1),
        );
        await expect(stale).rejects.toBeInstanceOf(CheckpointFencingError);
        expect((await store.getSession(who.conversation_key))?.head_version).toBe(2);
        expect((await store.listVersions(who.conversation_key)).map((v) => v.version)).toEqual([2, 1]);
        expect(await store.findProcessedMessage(who.conversation_key, 'stale')).toBeNull();
        expect(await store.listEvents(who.conversation_key)).toEqual([]);
      });

      it('refuses a commit from a token that no longer holds the lease', async () => {
        const who = identity();
        await seed(who, 1, 'old:1');
        await store.releaseLease(who.conversation_key, 'old:1');
        await take(who, 'new:1', 60000);
        const state: AgentState = { user_text: 'late' };
        await expect(
          store.commitTurn(turnCommit(who, 'old:1', 2, state), writeFor(state, 1, 1)),
        ).rejects.toBeInstanceOf(CheckpointFencingError);
        expect((await store.getSession(who.conversation_key))?.head_version).toBe(1);
      });

      it('refuses, writing nothing, a commit whose lease the database lost (a crash before it was flushed)', async () => {
        // The lease commits without waiting for a WAL flush: after a crash its row can be as it was before.
        const returning = identity();
        await seed(returning, 1, 'lost:1');
        await store.releaseLease(returning.conversation_key, 'lost:1');
        const fresh = identity();
        expect(await take(fresh, 'lost:1', 60000)).not.toBeNull();
        await store.deleteConversation(fresh.conversation_key);
        for (const [who, turn] of [
          [returning, 2],
          [fresh, 1],
        ] as const) {
          const state: AgentState = { user_text: 'after the crash' };
          await expect(
            store.commitTurn(
              turnCommit(who, 'lost:1', turn, state, {
                events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
                idempotency: { message_id: 'after-crash', response: {} },
              }),
              writeFor(state, turn - 1, turn > 1 ? turn - 1 : null),
            ),
          ).rejects.toBeInstanceOf(CheckpointFencingError);
          expect((await store.listVersions(who.conversation_key)).length).toBe(turn - 1);
          expect(await store.findProcessedMessage(who.conversation_key, 'after-crash')).toBeNull();
          expect(await harness.turnLog(who.conversation_key)).toHaveLength(turn - 1);
        }
        expect(await store.getSession(fresh.conversation_key)).toBeNull();
      });

      it('is all-or-nothing: a failing write late in the commit leaves no trace', async () => {
        const who = identity();
        await take(who, 'a:1', 60000);
        const first: AgentState = { user_text: 'first' };
        await store.commitTurn(
          turnCommit(who, 'a:1', 1, first, {
            idempotency: { message_id: 'dup', response: { answer: 'one' } },
          }),
          writeFor(first, 0, null),
        );
        await take(who, 'a:1', 60000);
        // The idempotency record, the commit's last write, collides with the one turn 1 stored.
        const state: AgentState = { user_text: 'second' };
        await expect(
          store.commitTurn(
            turnCommit(who, 'a:1', 2, state, {
              events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
              idempotency: { message_id: 'dup', response: { answer: 'two' } },
            }),
            writeFor(state, 1, 1),
          ),
        ).rejects.toThrow();
        expect(await store.getSession(who.conversation_key)).toMatchObject({
          head_version: 1,
          turn_count: 1,
          lease_owner: 'a:1',
        });
        expect(await store.getVersion(who.conversation_key, 2)).toBeNull();
        expect(await store.listEvents(who.conversation_key)).toEqual([]);
        expect(await harness.turnLog(who.conversation_key)).toHaveLength(1);
        expect(await store.findProcessedMessage(who.conversation_key, 'dup')).toEqual({
          response: { answer: 'one' },
          fingerprint: null,
        });
      });

      it('returns the state exactly as hashed, including text jsonb cannot hold verbatim', async () => {
        const who = identity();
        await take(who, 'a:1', 60000);
        // The client's metadata is free-form JSON: numbers, nesting and a Date serialize like any caller's.
        const state: AgentState = {
          user_text: 'nul\u0000 and lone \ud800 surrogate, emoji 😀, acentuação',
          metadata: {
            z: 1,
            a: [3, 1.5, -0.25, 1e21, 5e-7],
            nested: { b: true, a: null },
            at: new Date('2025-01-02T03:04:05.000Z'),
          },
        };
        const write = writeFor(state, 0, null);
        await store.commitTurn(
          turnCommit(who, 'a:1', 1, state, {
            events: [{ name: 'NOC.001', payload: { text: 'x\u0000y' }, at: new Date().toISOString() }],
            idempotency: { message_id: 'm', response: { answer: '\u0000' } },
          }),
          write,
        );
        const row = await store.getVersion(who.conversation_key, 1);
        expect(row?.checksum).toBe(write.checksum);
        expect(row?.state_text).toBe(write.serializedState);
        const read = row ? readCheckpoint(row) : null;
        expect(read).toEqual({ state: JSON.parse(write.serializedState) });
        expect(stateOf(row)).toMatchObject({
          user_text: 'nul\u0000 and lone \ud800 surrogate, emoji 😀, acentuação',
          metadata: { at: '2025-01-02T03:04:05.000Z' },
        });
        expect((await store.listEvents(who.conversation_key))[0].payload).toEqual({
          ...envelopeOf(who, 1),
          text: 'x\ufffdy',
        });
        expect((await store.findProcessedMessage(who.conversation_key, 'm'))?.response).toEqual({
          answer: '\ufffd',
        });
      });
    });

    it('deletes, with each commit, the versions of its conversation below the newest ones kept', async () => {
      const who = identity();
      const token = await seed(who, 5);
      const other = identity();
      await seed(other, 5);
      const versions = async (of: ConversationIdentity) =>
        (await store.listVersions(of.conversation_key)).map((v) => v.version);
      let state: AgentState = { user_text: 'six' };
      await store.commitTurn(turnCommit(who, token, 6, state), writeFor(state, 5, 5, 3));
      expect(await versions(who)).toEqual([6, 5, 4]);
      expect(await versions(other)).toEqual([5, 4, 3, 2, 1]);
      // A fenced commit deletes nothing either.
      state = { user_text: 'stale' };
      await expect(
        store.commitTurn(turnCommit(who, token, 7, state), writeFor(state, 5, 5, 1)),
      ).rejects.toBeInstanceOf(CheckpointFencingError);
      expect(await versions(who)).toEqual([6, 5, 4]);
    });

    describe('failed runs', () => {
      const failure = (who: ConversationIdentity, turn: number, error: string) => ({
        turn,
        events: [
          { name: 'NOC.005', payload: { ...envelopeOf(who, turn), error }, at: new Date().toISOString() },
        ],
      });

      it('releases the lease and records the run after the head it started from, numbered on that head', async () => {
        const who = identity();
        const token = await seed(who, 2);
        expect(await store.releaseFailed(who.conversation_key, token, failure(who, 3, 'first'))).toBe(true);
        expect((await store.getSession(who.conversation_key))?.lease_owner).toBeNull();
        expect(await take(who, 'b:1', 60000)).not.toBeNull();
        expect(await store.releaseFailed(who.conversation_key, 'b:1', failure(who, 3, 'again'))).toBe(true);
        // Nothing of the state moves: the next commit extends the same head.
        const state: AgentState = { user_text: 'three' };
        expect(await take(who, 'b:1', 60000)).not.toBeNull();
        await store.commitTurn(turnCommit(who, 'b:1', 3, state), writeFor(state, 2, 2));
        expect(await take(who, 'b:1', 60000)).not.toBeNull();
        expect(await store.releaseFailed(who.conversation_key, 'b:1', failure(who, 4, 'later'))).toBe(true);
        const runs = await harness.failedRuns(who.conversation_key);
        expect(runs.map(({ version, attempt, turn }) => [version, attempt, turn])).toEqual([
          [2, 1, 3],
          [2, 2, 3],
          [3, 1, 4],
        ]);
        expect(runs[0].events).toEqual([
          { name: 'NOC.005', payload: { ...envelopeOf(who, 3), error: 'first' } },
        ]);
      });

      it('records nothing, and leaves the lease, for a token that no longer holds it', async () => {
        const who = identity();
        await seed(who, 1, 'holder:1');
        expect(await store.releaseFailed(who.conversation_key, 'other:1', failure(who, 2, 'x'))).toBe(false);
        expect((await store.getSession(who.conversation_key))?.lease_owner).toBe('holder:1');
        expect(await harness.failedRuns(who.conversation_key)).toEqual([]);
      });

      it('records a run that failed before the first commit, on head 0', async () => {
        const who = identity();
        expect(await take(who, 'a:1', 60000)).not.toBeNull();
        expect(await store.releaseFailed(who.conversation_key, 'a:1', failure(who, 1, 'x'))).toBe(true);
        expect((await harness.failedRuns(who.conversation_key)).map((run) => run.version)).toEqual([0]);
      });

      it('ages out with the turn log and goes with its conversation', async () => {
        const [old, recent] = [identity(), identity()];
        for (const who of [old, recent]) {
          expect(await take(who, 'a:1', 60000)).not.toBeNull();
          expect(await store.releaseFailed(who.conversation_key, 'a:1', failure(who, 1, 'x'))).toBe(true);
        }
        await harness.backdate(old.conversation_key, 400, ['turn_failures']);
        const cutOff = new Date(Date.now() - 365 * 86_400_000);
        expect(await store.deleteExpired('turn_failures', cutOff, 1000)).toBeGreaterThanOrEqual(1);
        expect(await harness.failedRuns(old.conversation_key)).toEqual([]);
        expect(await harness.failedRuns(recent.conversation_key)).toHaveLength(1);
        await store.deleteConversation(recent.conversation_key);
        expect(await harness.failedRuns(recent.conversation_key)).toEqual([]);
      });
    });

    it('deletes one conversation entirely and nothing else', async () => {
      const who = identity();
      const other = identity();
      const token = await seed(who, 2);
      await seed(other, 1);
      const state: AgentState = { user_text: 'three' };
      await store.commitTurn(
        turnCommit(who, token, 3, state, {
          events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
          idempotency: { message_id: 'm-3', response: {} },
        }),
        writeFor(state, 2, 2),
      );
      await store.deleteConversation(who.conversation_key);
      expect(await store.getSession(who.conversation_key)).toBeNull();
      expect(await store.listVersions(who.conversation_key)).toEqual([]);
      expect(await store.listEvents(who.conversation_key)).toEqual([]);
      expect(await store.findProcessedMessage(who.conversation_key, 'm-3')).toBeNull();
      expect((await store.listVersions(other.conversation_key)).map((v) => v.version)).toEqual([1]);
    });

    /** Two processed messages on each of three conversations; `older` and `old` backdated 401 and 400 days. */
    async function agedConversations(tables?: RetainedTable[]) {
      const [older, old, recent] = [identity(), identity(), identity()];
      for (const who of [older, old, recent]) {
        await take(who, 'a:1', 60000);
        for (let turn = 1; turn <= 2; turn++) {
          const state: AgentState = { user_text: `m-${turn}` };
          await store.commitTurn(
            turnCommit(who, 'a:1', turn, state, {
              events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
              idempotency: { message_id: `m-${turn}`, response: { turn } },
            }),
            writeFor(state, turn - 1, turn > 1 ? turn - 1 : null),
          );
          await take(who, 'a:1', 60000);
        }
      }
      await harness.backdate(older.conversation_key, 401, tables);
      await harness.backdate(old.conversation_key, 400, tables);
      // Far enough back that no other suite's rows are that old.
      return { older, old, recent, cutOff: new Date(Date.now() - 365 * 86_400_000) };
    }

    it('deletes turn log rows created before the cut-off, oldest first, up to the limit, with the idempotency records they answer', async () => {
      const { older, old, recent, cutOff } = await agedConversations();
      expect(await store.deleteExpired('turn_log', cutOff, 1)).toBe(1);
      expect(await store.listEvents(older.conversation_key)).toHaveLength(1);
      // The response of m-1 was in the deleted row: the message would run again, as after its record expired.
      expect(await store.findProcessedMessage(older.conversation_key, 'm-1')).toBeNull();
      expect(await store.findProcessedMessage(older.conversation_key, 'm-2')).not.toBeNull();
      expect(await store.deleteExpired('turn_log', cutOff, 1000)).toBeGreaterThanOrEqual(3);
      for (const who of [older, old]) {
        expect(await store.listEvents(who.conversation_key)).toEqual([]);
        expect(await store.findProcessedMessage(who.conversation_key, 'm-2')).toBeNull();
      }
      // Their records went with the rows, so the idempotency sweep finds nothing of them left.
      expect(await store.deleteExpired('processed_messages', cutOff, 1000)).toBe(0);
      expect(await store.listEvents(recent.conversation_key)).toHaveLength(2);
      expect(await store.findProcessedMessage(recent.conversation_key, 'm-2')).toEqual({
        response: { turn: 2 },
        fingerprint: null,
      });
      // Checkpoints and sessions do not age out.
      expect((await store.listVersions(old.conversation_key)).map((v) => v.version)).toEqual([2, 1]);
      expect((await store.getSession(old.conversation_key))?.head_version).toBe(2);
    });

    it('deletes idempotency records created before the cut-off on their own, leaving the turn log', async () => {
      const { older, old, recent, cutOff } = await agedConversations(['processed_messages']);
      expect(await store.deleteExpired('processed_messages', cutOff, 1)).toBe(1);
      expect(await store.deleteExpired('processed_messages', cutOff, 1000)).toBeGreaterThanOrEqual(3);
      expect(await store.deleteExpired('turn_log', cutOff, 1000)).toBe(0);
      for (const who of [older, old]) {
        expect(await store.listEvents(who.conversation_key)).toHaveLength(2);
        expect(await store.findProcessedMessage(who.conversation_key, 'm-1')).toBeNull();
        expect(await store.findProcessedMessage(who.conversation_key, 'm-2')).toBeNull();
      }
      expect(await store.findProcessedMessage(recent.conversation_key, 'm-1')).toEqual({
        response: { turn: 1 },
        fingerprint: null,
      });
      // The message whose record expired runs again: its new commit stores a new record.
      await take(older, 'a:1', 60000);
      const state: AgentState = { user_text: 'm-1 again' };
      await store.commitTurn(
        turnCommit(older, 'a:1', 3, state, { idempotency: { message_id: 'm-1', response: { turn: 3 } } }),
        writeFor(state, 2, 2),
      );
      expect((await store.findProcessedMessage(older.conversation_key, 'm-1'))?.response).toEqual({
        turn: 3,
      });
    });

    it('replays a record of an earlier release, which holds its response itself', async () => {
      const who = identity();
      const token = await seed(who, 1);
      await harness.storeEarlierRecord(who.conversation_key, 'legacy', { answer: 'from before' });
      expect(await store.findProcessedMessage(who.conversation_key, 'legacy')).toEqual({
        response: { answer: 'from before' },
        fingerprint: null,
      });
      await store.releaseLease(who.conversation_key, token);
      const attempt = await store.acquireLease(who, {
        token: 'b:1',
        leaseMs: 60000,
        messageId: 'legacy',
      });
      expect(attempt.replay?.response).toEqual({ answer: 'from before' });
      expect((await store.getSession(who.conversation_key))?.lease_owner).toBeNull();
    });

    it('lists sessions with at least one turn, filtered and paginated by cursor', async () => {
      const tenant = `t${Date.now().toString(36)}${counter++}`;
      const sessions = [identity(tenant), identity(tenant), identity(tenant)];
      for (const who of sessions) await seed(who, 1);
      await take(identity(tenant), 'never-committed:1', 60000);
      const first = await store.listSessions({ tenant_id: tenant, limit: 2 });
      expect(first.items).toHaveLength(2);
      expect(first.next_cursor).toEqual(expect.any(String));
      const second = await store.listSessions({
        tenant_id: tenant,
        limit: 2,
        cursor: first.next_cursor ?? undefined,
      });
      expect(second.items).toHaveLength(1);
      expect(second.next_cursor).toBeNull();
      const seen = [...first.items, ...second.items].map((s) => s.conversation_key).sort();
      expect(seen).toEqual(sessions.map((s) => s.conversation_key).sort());
      expect((await store.listSessions({ tenant_id: tenant, status: 'ended', limit: 10 })).items).toEqual([]);
      expect((await store.listSessions({ tenant_id: tenant, agent_id: 'other', limit: 10 })).items).toEqual(
        [],
      );
      const newest = first.items[0].updated_at.toISOString();
      const since = await store.listSessions({ tenant_id: tenant, updated_after: newest, limit: 10 });
      expect(since.items.map((s) => s.conversation_key)).toContain(first.items[0].conversation_key);
      const until = await store.listSessions({ tenant_id: tenant, updated_before: newest, limit: 10 });
      expect(until.items.map((s) => s.conversation_key)).not.toContain(first.items[0].conversation_key);
      await expect(store.listSessions({ limit: 1, cursor: 'not-a-cursor' })).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
    });
  });
}
