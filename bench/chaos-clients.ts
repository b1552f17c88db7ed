import { z } from 'zod';
import type { Acknowledged } from './chaos-checks';

/** What the drill reads of an answer: a turn's number, or an error's code. */
const answerSchema = z.object({
  turn: z.number().int().optional(),
  error: z.object({ code: z.string() }).optional(),
});

/** An acknowledged turn as its client saw it. */
export interface ClientAck extends Acknowledged {
  client: number;
  /** When the 200 arrived (epoch ms). */
  at: number;
  /** The request that got the 200. */
  latencyMs: number;
  /** From the first attempt of the message to its 200, retries included. */
  acknowledgedAfterMs: number;
  replayed: boolean;
}

export interface TrafficSettings {
  ports: number[];
  tenant: string;
  channelKey: string;
  clients: number;
  turnsPerConversation: number;
  /** The pause before resending (shorter than a 503's Retry-After, to see recovery to the second). */
  retryMs: number;
  requestTimeoutMs: number;
}

/** What the clients saw: the acknowledged turns, every other answer by kind, and what never got an answer. */
export class Traffic {
  readonly acknowledged: ClientAck[] = [];
  /** Answers other than 200 and failed requests, by kind (`503 DATABASE_UNAVAILABLE`, `connection refused`…). */
  readonly failures = new Map<string, number>();
  readonly unanswered: { conversation_key: string; message_id: string }[] = [];
  /** Answers whose turn number is not the message's place in its conversation. */
  readonly misnumbered: string[] = [];
  attempts = 0;
  private startingTurns = true;
  private drainDeadline = Infinity;

  constructor(private readonly settings: TrafficSettings) {}

  /** Runs the clients until `drain`; each sends its conversations' messages in order, resending until a 200. */
  run(): Promise<void> {
    return Promise.all(
      Array.from({ length: this.settings.clients }, (_, client) => this.client(client)),
    ).then(() => undefined);
  }

  /** No new turn starts; a message without its 200 is resent until then, and counted unanswered after. */
  drain(deadlineMs: number): void {
    this.startingTurns = false;
    this.drainDeadline = Date.now() + deadlineMs;
  }

  private async client(client: number): Promise<void> {
    for (let conversation = 0; this.startingTurns; conversation++) {
      const session = `c${client}-${conversation}`;
      for (
        let position = 1;
        position <= this.settings.turnsPerConversation && this.startingTurns;
        position++
      ) {
        if (!(await this.deliver(client, session, position))) return;
      }
    }
  }

  /** Sends one message until it is answered 200 (true), or the drain deadline passes (false). */
  private async deliver(client: number, session: string, position: number): Promise<boolean> {
    const { ports, tenant, retryMs } = this.settings;
    const conversationKey = `${tenant}:${session}`;
    const messageId = `${session}-m${position}`;
    const body = JSON.stringify({
      tenant_id: tenant,
      agent_id: 'telecom_contas',
      session_id: session,
      message_id: messageId,
      text: `mensagem ${position} da conversa ${session}: qual o valor da minha fatura?`,
    });
    const firstAt = Date.now();
    for (let attempt = 0; ; attempt++) {
      if (Date.now() > this.drainDeadline) {
        this.unanswered.push({ conversation_key: conversationKey, message_id: messageId });
        return false;
      }
      // Like a load balancer: each attempt may reach another replica.
      const port = ports[(client + position + attempt) % ports.length];
      this.attempts += 1;
      const sentAt = Date.now();
      const outcome = await this.send(port, body);
      if (outcome.status === 200 && outcome.turn !== undefined) {
        const at = Date.now();
        this.acknowledged.push({
          client,
          conversation_key: conversationKey,
          message_id: messageId,
          turn: outcome.turn,
          at,
          latencyMs: at - sentAt,
          acknowledgedAfterMs: at - firstAt,
          replayed: outcome.replayed,
        });
        if (outcome.turn !== position) {
          this.misnumbered.push(`${conversationKey}/${messageId}: turn ${outcome.turn}`);
        }
        return true;
      }
      this.failures.set(outcome.kind, (this.failures.get(outcome.kind) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, retryMs + Math.random() * retryMs));
    }
  }

  private async send(
    port: number,
    body: string,
  ): Promise<{ status: number; kind: string; turn?: number; replayed: boolean }> {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/v1/channels/web/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.settings.channelKey}` },
        body,
        signal: AbortSignal.timeout(this.settings.requestTimeoutMs),
      });
      const text = await response.text();
      const answer = answerSchema.safeParse(parseJson(text));
      const code = answer.success ? answer.data.error?.code : 'unreadable answer';
      return {
        status: response.status,
        kind: `${response.status}${code ? ` ${code}` : ''}`,
        turn: answer.success ? answer.data.turn : undefined,
        replayed: response.headers.get('idempotent-replay') === 'true',
      };
    } catch (error) {
      return { status: 0, kind: requestFailure(error), replayed: false };
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A request that got no HTTP answer, by why: the replica was down, dropped the connection, or took too long. */
function requestFailure(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'no answer in time';
  const cause = error instanceof Error ? error.cause : undefined;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? cause.code : undefined;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection dropped';
  return `request failed (${typeof code === 'string' ? code : String(error)})`;
}
