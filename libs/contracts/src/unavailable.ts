import { z } from 'zod';
import type { StoredEvent } from './events';

/**
 * What a turn could not use, by code: a model stage that failed and took its fallback, the guardrail model that
 * gave no verdict (its fail-closed rails then block without judging the text), an MCP server that could not
 * serve a tool call. None of them is a statement about the customer's message.
 */
export const MODEL_UNAVAILABLE = 'MODEL_UNAVAILABLE';
export const GUARDRAIL_MODEL_UNAVAILABLE = 'GUARDRAIL_MODEL_UNAVAILABLE';
export const MCP_UNAVAILABLE = 'MCP_UNAVAILABLE';
export const UNAVAILABLE_CODES = [MODEL_UNAVAILABLE, GUARDRAIL_MODEL_UNAVAILABLE, MCP_UNAVAILABLE] as const;

export const unavailableDependencySchema = z.object({
  code: z.enum(UNAVAILABLE_CODES),
  name: z.string().describe('The LLM profile (a model or the guardrail model) or the MCP server'),
  cause: z
    .string()
    .describe(
      'Models: timeout, http_error, invalid_response, error, or what kept the endpoint out of reach (refused, dns, tls, reset, unreachable); the guardrail model also invalid_output (no usable verdict) and not_configured; MCP servers: unavailable or timeout',
    ),
  status: z.number().int().describe('The HTTP status of an http_error, else null').nullable(),
});
export type UnavailableDependency = z.output<typeof unavailableDependencySchema>;

type TurnEvent = Pick<StoredEvent, 'name' | 'payload'>;

const GUARDRAIL_FAILURE_EVENTS = new Set(['GRL.007', 'GRL.008']);
const MCP_OUTAGES = new Set(['unavailable', 'timeout']);

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * The dependencies a turn could not use, from its events: a failed `llm.call` (a cancelled one says nothing about
 * the model), a guardrail-model rail that could not decide (`GRL.007`/`GRL.008` of a model verdict, which names
 * its profile), an MCP call its server did not serve. One entry per profile or server, its last failure; a
 * profile that failed as the guardrail model is reported as that, with the cause and status of its call.
 */
export function unavailableDependencies(events: readonly TurnEvent[]): UnavailableDependency[] {
  const models = new Map<string, UnavailableDependency>();
  const guardrail = new Map<string, UnavailableDependency>();
  const servers = new Map<string, UnavailableDependency>();
  for (const { name, payload } of events) {
    if (name === 'llm.call') {
      const profile = text(payload.profile);
      const cause = text(payload.cause);
      if (profile === null || cause === null) continue;
      const status = typeof payload.status === 'number' ? payload.status : null;
      models.set(profile, { code: MODEL_UNAVAILABLE, name: profile, cause, status });
    } else if (GUARDRAIL_FAILURE_EVENTS.has(name)) {
      const metadata = payload.metadata;
      if (typeof metadata !== 'object' || metadata === null || !('source' in metadata)) continue;
      const profile = 'profile' in metadata ? text(metadata.profile) : null;
      const cause = text(payload.cause);
      if (metadata.source !== 'llm' || profile === null || cause === null) continue;
      guardrail.set(profile, { code: GUARDRAIL_MODEL_UNAVAILABLE, name: profile, cause, status: null });
    } else if (name === 'mcp.tool_call.completed') {
      const server = text(payload.server);
      const outcome = text(payload.outcome);
      if (server === null || outcome === null || !MCP_OUTAGES.has(outcome)) continue;
      servers.set(server, { code: MCP_UNAVAILABLE, name: server, cause: outcome, status: null });
    }
  }
  const guardrailEntries = [...guardrail.values()].map((entry) => {
    const call = models.get(entry.name);
    models.delete(entry.name);
    return call ? { ...entry, cause: call.cause, status: call.status } : entry;
  });
  return [...guardrailEntries, ...models.values(), ...servers.values()];
}
