import { Global, Module } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Test, TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import {
  CheckpointFencingError,
  CheckpointService,
  CheckpointStore,
  readCheckpoint,
} from '@agent/checkpoint';
import { AppConfigModule } from '@agent/config';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import { DatabaseService } from '@agent/database';
import { LlmModule } from '@agent/llm';
import { ObservabilityModule } from '@agent/observability';
import { JudgesService } from '@agent/judges';
import { IdempotencyKeyReusedError, TurnInput, TurnService, WorkflowModule } from '@agent/workflow';
import { storeWith } from '../support/checkpoint-turns';
import { InMemoryCheckpointStore } from '../support/in-memory-checkpoint-store';
import { REPO_ROOT } from '../support/repo-root';
import { toolResultOf } from '../support/states';
import { withEnv } from '../support/with-env';

/**
 * A DataSource never initialized: with long-term memory and RAG off, a turn has no reason to reach the database
 * beyond the checkpoint store, and a query through this one would fail the test.
 */
@Global()
@Module({
  providers: [
    { provide: DataSource, useValue: new DataSource({ type: 'postgres' }) },
    {
      provide: DatabaseService,
      inject: [DataSource],
      useFactory: (ds: DataSource) => new DatabaseService(ds, null),
    },
  ],
  exports: [DataSource, DatabaseService],
})
class NoDatabaseModule {}

/** The whole turn (the real graph, every model stage on its no-model fallback) on the in-memory store. */
async function turnModule(store: CheckpointStore): Promise<TestingModule> {
  const env = {
    NODE_ENV: 'test',
    CONFIG_DIR: `${REPO_ROOT}/config`,
    LLM_BASE_URL: undefined,
    LLM_PROVIDER: undefined,
    LLM_MODEL: undefined,
    ENABLE_LONG_TERM_MEMORY: 'false',
    RAG_ENABLED: 'false',
  };
  return withEnv(env, () =>
    Test.createTestingModule({
      imports: [AppConfigModule, ObservabilityModule, NoDatabaseModule, LlmModule, WorkflowModule],
    })
      .overrideProvider(CheckpointStore)
      .useValue(store)
      .compile(),
  );
}

let counter = 0;
function message(overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    request_id: `r-${counter++}`,
    channel: 'web',
    tenant_id: 'acme',
    agent_id: 'telecom_contas',
    session_id: `turn-${process.pid}-${counter++}`,
    text: 'Qual é o meu plano?',
    ...overrides,
  };
}

describe('TurnService', () => {
  let store: InMemoryCheckpointStore;
  let module: TestingModule;
  let turns: TurnService;
  let heard: string[];

  beforeEach(async () => {
    store = new InMemoryCheckpointStore();
    module = await turnModule(store);
    turns = module.get(TurnService);
    heard = [];
    module.get(EventEmitter2).onAny((name) => heard.push(String(name)));
  });

  afterEach(async () => {
    await module.close();
  });

  /** The state the conversation's head checkpoint holds. */
  async function headState(conversationKey: string): Promise<AgentState> {
    const [head] = await store.latestVersions(conversationKey, 1);
    const read = readCheckpoint(head);
    if (!('state' in read)) throw new Error(read.problem);
    return read.state;
  }

  /**
   * Commits `state` as the conversation's next version, the way a previous turn would have left it (with the
   * response it stored for its message, when given).
   */
  async function seedState(
    input: TurnInput,
    state: AgentState,
    idempotency?: { message_id: string; response: Record<string, unknown> },
  ): Promise<void> {
    const checkpoints = module.get(CheckpointService);
    const identity = {
      conversation_key: conversationKeyOf(input.tenant_id, input.session_id),
      tenant_id: input.tenant_id,
      session_id: input.session_id,
      agent_id: input.agent_id,
    };
    const lease = await checkpoints.acquire(identity);
    await checkpoints.commit({
      identity,
      leaseToken: lease.token,
      parentVersion: lease.session.head_version || null,
      turn: lease.session.turn_count + 1,
      state,
      status: 'active',
      events: [],
      idempotency,
    });
  }

  it('runs a message through the graph and commits its turn with the events and the idempotency record', async () => {
    const input = message({ message_id: 'm-1' });
    const { response, replayed } = await turns.handle(input);
    const key = `acme:${input.session_id}`;
    expect(replayed).toBe(false);
    expect(response).toMatchObject({
      session_id: input.session_id,
      conversation_key: key,
      message_id: 'm-1',
      turn: 1,
      blocked: false,
      session_ended: false,
    });
    expect(response.answer).not.toBe('');
    expect(await store.getSession(key)).toMatchObject({ head_version: 1, turn_count: 1, lease_owner: null });
    expect(await headState(key)).toMatchObject({ user_text: input.text, turn: 1, message_id: 'm-1' });
    const stored = await store.listEvents(key);
    expect(stored.map((e) => e.name)).toEqual(expect.arrayContaining(['NOC.001', 'AGENT_COMPLETED']));
    // Listeners hear the turn's events once it committed, in the order they were stored.
    expect(heard).toEqual(stored.map((e) => e.name));
    expect((await store.findProcessedMessage(key, 'm-1'))?.response).toEqual(response);
  });

  it('answers a resent message from its record without running a turn', async () => {
    const input = message({ message_id: 'm-1' });
    const first = await turns.handle(input);
    heard = [];
    const again = await turns.handle({ ...input, request_id: 'resent' });
    expect(again).toEqual({ response: first.response, replayed: true });
    expect((await store.getSession(`acme:${input.session_id}`))?.head_version).toBe(1);
    expect(heard).toEqual([]);
  });

  it('replays a response stored before responses carried transaction_status, with it null', async () => {
    const input = message({ message_id: 'm-old' });
    const { response } = await turns.handle(message({ session_id: input.session_id }));
    const { transaction_status: _added, ...older } = response;
    await seedState(input, await headState(`acme:${input.session_id}`), {
      message_id: 'm-old',
      response: { ...older, turn: 2, message_id: 'm-old' },
    });
    const replay = await turns.handle(input);
    expect(replay).toEqual({
      response: { ...response, turn: 2, message_id: 'm-old', transaction_status: null },
      replayed: true,
    });
  });

  it('refuses a message id reused with another body, writing nothing', async () => {
    const input = message({ message_id: 'm-1' });
    await turns.handle(input);
    await expect(turns.handle({ ...input, text: 'outra coisa' })).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    const key = `acme:${input.session_id}`;
    expect(await store.getSession(key)).toMatchObject({ head_version: 1, lease_owner: null });
  });

  it('runs concurrent messages of one conversation one after another, in arrival order', async () => {
    const base = message();
    const texts = ['um', 'dois', 'três', 'quatro'];
    const outcomes = await Promise.all(texts.map((text) => turns.handle({ ...base, text })));
    expect(outcomes.map((o) => o.response.turn)).toEqual([1, 2, 3, 4]);
    const key = `acme:${base.session_id}`;
    // Contiguous, the oldest compacted away by the commit of 4 (CHECKPOINT_RETENTION is 3).
    expect((await store.listVersions(key)).map((v) => v.version)).toEqual([4, 3, 2]);
    const history = (await headState(key)).history ?? [];
    expect(history.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(texts);
  });

  it("starts each turn without the previous turn's per-turn facts, keeping the conversation's", async () => {
    const input = message();
    await seedState(input, {
      active_agent: 'billing_agent',
      history: [{ role: 'user', content: 'antes', turn: 1 }],
      long_term_memory_load_error: 'timeout',
      transaction_interruption: 'abandon',
      supervisor_guidance: 'from the last turn',
      mcp_results: [toolResultOf()],
    });
    await turns.handle(input);
    const state = await headState(`acme:${input.session_id}`);
    expect(state.turn).toBe(2);
    expect(state.history?.[0]).toMatchObject({ role: 'user', content: 'antes' });
    // Each was set by the seeded turn and is left alone by this one: only the reset removes it.
    expect(state).not.toHaveProperty('long_term_memory_load_error', 'timeout');
    expect(state).not.toHaveProperty('transaction_interruption', 'abandon');
    expect(state).not.toHaveProperty('supervisor_guidance', 'from the last turn');
    expect(state).not.toHaveProperty('mcp_results', [{ tool: 'x' }]);
  });

  it('carries a held handoff into the next turn', async () => {
    const input = message();
    await seedState(input, { human_handoff_held: true, human_handoff_requested: true });
    const { response } = await turns.handle(input);
    expect(response).toMatchObject({ human_handoff_requested: true, session_control: 'HUMAN_HANDOFF' });
    expect((await store.getSession(`acme:${input.session_id}`))?.status).toBe('handoff');
  });

  it('announces nothing and gives the lease back when the commit is fenced', async () => {
    await module.close();
    // Another writer takes over the conversation while this turn runs, as after a lapsed lease.
    const fenced = storeWith(store, {
      commitTurn: async (commit, write) => {
        const session = store.tables.sessions.get(commit.identity.conversation_key);
        if (session) session.head_version += 1;
        return store.commitTurn(commit, write);
      },
    });
    module = await turnModule(fenced);
    turns = module.get(TurnService);
    heard = [];
    module.get(EventEmitter2).onAny((name) => heard.push(String(name)));
    const input = message({ message_id: 'm-1' });
    await expect(turns.handle(input)).rejects.toBeInstanceOf(CheckpointFencingError);
    expect(heard).toEqual([]);
    const key = `acme:${input.session_id}`;
    expect(await store.findProcessedMessage(key, 'm-1')).toBeNull();
    expect(await store.getSession(key)).toMatchObject({ lease_owner: null, turn_count: 0 });
  });

  it('announces a node that throws with NOC.005 and a workflow_telemetry.failed record, stored after the head', async () => {
    const input = message({ message_id: 'm-2' });
    await seedState(input, { history: [] });
    const key = `acme:${input.session_id}`;
    // The judge fails the way a bug or a broken dependency would: the exception escapes the node.
    jest.spyOn(module.get(JudgesService), 'evaluate').mockRejectedValueOnce(new TypeError('judge exploded'));
    const announced: Record<string, unknown>[] = [];
    module.get(EventEmitter2).on('NOC.005', (payload: Record<string, unknown>) => announced.push(payload));

    await expect(turns.handle(input)).rejects.toThrow('judge exploded');
    // What the run did goes with it; its failure reaches the listeners all the same.
    expect(heard).toEqual(['NOC.005', 'workflow_telemetry.failed']);
    expect(announced).toEqual([
      expect.objectContaining({
        error: 'judge exploded',
        exception_type: 'TypeError',
        conversation_key: key,
        turn: 2,
      }),
    ]);
    // Recorded after the head it ran on (version 1), with the lease given back and the head unchanged.
    const failures = [...(store.tables.failures.get(key)?.values() ?? [])];
    expect(failures.map(({ version, attempt, turn }) => ({ version, attempt, turn }))).toEqual([
      { version: 1, attempt: 1, turn: 2 },
    ]);
    expect(failures[0].events.map((event) => event.name)).toEqual(['NOC.005', 'workflow_telemetry.failed']);
    expect(failures[0].events[1].payload).toMatchObject({
      workflow: 'agent_workflow',
      node: 'judge',
      error: 'judge exploded',
      exception_type: 'TypeError',
    });
    expect(await store.getSession(key)).toMatchObject({ lease_owner: null, head_version: 1 });
    // The message was not processed: sent again, it runs.
    const retried = await turns.handle(input);
    expect(retried).toMatchObject({ replayed: false, response: { turn: 2 } });
  });
});
