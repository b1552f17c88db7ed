import { unavailableDependencies } from './unavailable';

const llmCall = (profile: string, outcome: string, extra: Record<string, unknown> = {}) => ({
  name: 'llm.call',
  payload: { profile, model: 'm', outcome, ...extra },
});
const railFailure = (name: string, code: string, cause: string, metadata: Record<string, unknown>) => ({
  name,
  payload: { stage: 'input', code, action: 'block', cause, error: 'no verdict', metadata },
});
const toolCall = (server: string, outcome: string) => ({
  name: 'mcp.tool_call.completed',
  payload: { tool_name: 'consultar_plano', server, ok: outcome === 'ok', outcome },
});

describe('unavailableDependencies', () => {
  it('reports nothing for a turn whose dependencies answered, or whose calls were only cancelled', () => {
    expect(
      unavailableDependencies([
        llmCall('agent', 'ok'),
        llmCall('router', 'cancelled'),
        toolCall('telecom', 'ok'),
        // A tool that answered with a failure is the tool's answer, not an outage of its server.
        toolCall('retail', 'error'),
        { name: 'GRL.004', payload: { stage: 'input', code: 'PINJ', action: 'block', metadata: {} } },
      ]),
    ).toEqual([]);
  });

  it('names each failed profile and server once, with its last cause and HTTP status', () => {
    expect(
      unavailableDependencies([
        llmCall('route_continuity', 'timeout', { cause: 'timeout' }),
        llmCall('agent', 'http_error', { cause: 'http_error', status: 500 }),
        llmCall('agent', 'http_error', { cause: 'http_error', status: 401 }),
        llmCall('router', 'error', { cause: 'refused' }),
        toolCall('telecom', 'unavailable'),
        toolCall('telecom', 'timeout'),
      ]),
    ).toEqual([
      { code: 'MODEL_UNAVAILABLE', name: 'route_continuity', cause: 'timeout', status: null },
      { code: 'MODEL_UNAVAILABLE', name: 'agent', cause: 'http_error', status: 401 },
      { code: 'MODEL_UNAVAILABLE', name: 'router', cause: 'refused', status: null },
      { code: 'MCP_UNAVAILABLE', name: 'telecom', cause: 'timeout', status: null },
    ]);
  });

  it('reports a profile that failed as the guardrail model as that, first, with the cause of its call', () => {
    const modelFailure = { fail_closed: true, cause: 'http_error', source: 'llm', profile: 'guardrail' };
    expect(
      unavailableDependencies([
        llmCall('guardrail', 'http_error', { cause: 'http_error', status: 401 }),
        railFailure('GRL.008', 'PINJ', 'http_error', modelFailure),
        railFailure('GRL.007', 'TOX', 'http_error', modelFailure),
        llmCall('agent', 'error', { cause: 'dns' }),
      ]),
    ).toEqual([
      { code: 'GUARDRAIL_MODEL_UNAVAILABLE', name: 'guardrail', cause: 'http_error', status: 401 },
      { code: 'MODEL_UNAVAILABLE', name: 'agent', cause: 'dns', status: null },
    ]);
    // The rail's own deadline cancels the call: the rail's cause is all there is.
    expect(
      unavailableDependencies([
        llmCall('guardrail', 'cancelled'),
        railFailure('GRL.008', 'PINJ', 'timeout', { ...modelFailure, cause: 'timeout' }),
      ]),
    ).toEqual([{ code: 'GUARDRAIL_MODEL_UNAVAILABLE', name: 'guardrail', cause: 'timeout', status: null }]);
    // A deterministic rail that crashed is no model outage.
    expect(
      unavailableDependencies([railFailure('GRL.008', 'INPUT_SIZE', 'error', { fail_closed: true })]),
    ).toEqual([]);
  });
});
