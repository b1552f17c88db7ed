import { EventEmitter2 } from '@nestjs/event-emitter';
import { EventBusService } from './event-bus.service';
import { TurnContext, TurnContextStore } from './turn-context';

function context(): TurnContext {
  return {
    request_id: 'r1',
    tenant_id: 'acme',
    agent_id: 'telecom_contas',
    session_id: 's1',
    conversation_key: 'acme:s1',
    turn: 4,
    events: [],
    nodes: [],
  };
}

describe('EventBusService', () => {
  function bus() {
    const emitter = new EventEmitter2();
    const heard: { name: string; payload: Record<string, unknown> }[] = [];
    emitter.onAny((name, payload) =>
      heard.push({ name: String(name), payload: payload as Record<string, unknown> }),
    );
    return { events: new EventBusService(emitter), heard };
  }

  it('inside a turn, buffers events until the commit publishes them, in order, with the envelope', async () => {
    const { events, heard } = bus();
    const turn = context();
    await TurnContextStore.run(turn, () => {
      events.emit('session.end.requested', { reason: 'done', source: 'continuity' });
      events.emit('NOC.001', { channel: 'web' });
      return Promise.resolve();
    });
    expect(heard).toEqual([]);
    expect(turn.events.map((e) => e.name)).toEqual(['session.end.requested', 'NOC.001']);
    events.publishCommitted(turn);
    expect(heard.map((e) => e.name)).toEqual(['session.end.requested', 'NOC.001']);
    expect(heard[0].payload).toMatchObject({
      reason: 'done',
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: 's1',
      conversation_key: 'acme:s1',
      turn: 4,
      at: expect.any(String),
    });
  });

  it('a turn that never commits announces nothing', async () => {
    const { events, heard } = bus();
    await expect(
      TurnContextStore.run(context(), () => {
        events.emit('session.human_handoff.requested', { reason: 'x', source: 'continuity' });
        return Promise.reject(new Error('commit failed'));
      }),
    ).rejects.toThrow('commit failed');
    expect(heard).toEqual([]);
  });

  it('publishes at once outside a turn and after the commit (work the turn left running)', async () => {
    const { events, heard } = bus();
    events.emit('llm.call', {
      profile: 'p',
      model: 'm',
      latency_ms: 1,
      prompt_tokens: 0,
      cached_prompt_tokens: 0,
      completion_tokens: 0,
      outcome: 'ok',
    });
    const turn = context();
    events.publishCommitted(turn);
    await TurnContextStore.run(turn, () => {
      events.emit('router.continuity.shadow', {
        continuity_agent: 'a',
        router_agent: 'a',
        router_intent: 'i',
        router_method: 'keyword',
        agreed: true,
      });
      return Promise.resolve();
    });
    expect(heard.map((e) => e.name)).toEqual(['llm.call', 'router.continuity.shadow']);
    expect(turn.events).toEqual([]);
  });

  it('a failing listener never breaks the emitter', () => {
    const emitter = new EventEmitter2();
    emitter.on('NOC.001', () => {
      throw new Error('listener bug');
    });
    const events = new EventBusService(emitter);
    expect(() => events.emit('NOC.001', {})).not.toThrow();
  });

  it('tells commit listeners after the commit published its events, until they unsubscribe', async () => {
    const { events, heard } = bus();
    const commits: { conversation: string; published: number }[] = [];
    const unsubscribe = events.onCommitted((turn) =>
      commits.push({ conversation: turn.conversation_key, published: heard.length }),
    );
    events.onCommitted(() => {
      throw new Error('listener bug');
    });
    const turn = context();
    await TurnContextStore.run(turn, () => {
      events.emit('NOC.001', { channel: 'web' });
      return Promise.resolve();
    });
    expect(commits).toEqual([]);
    expect(() => events.publishCommitted(turn)).not.toThrow();
    expect(commits).toEqual([{ conversation: 'acme:s1', published: 1 }]);
    unsubscribe();
    events.publishCommitted(context());
    expect(commits).toHaveLength(1);
  });
});
