import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TurnStream, TurnStreamEvent } from '@agent/observability';
import type { TurnResponse } from '@agent/workflow';
import type { ErrorBody } from './errors';

/** The client asks for the streamed answer: `Accept` names `text/event-stream` (docs/api.md#streaming-the-answer). */
export function wantsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.split(',').some((range) => range.split(';')[0].trim().toLowerCase() === 'text/event-stream');
}

/**
 * A turn answered as server-sent events. The response starts with the turn's first event, so a request the
 * API refuses before the turn runs (validation, a reused message_id, a busy conversation) still gets its
 * plain error status. Then: `route`, `answer.delta`s, `answer.tripped` when a rail stopped the answer, and,
 * after the commit, the rest of the final answer (or `answer.replaced` when it does not continue what was
 * released) and `turn.completed` with exactly the JSON body of the non-streamed call; or `error` in the error
 * envelope's shape. A client that goes away stops nothing: the turn runs to its commit.
 */
export class TurnEventStream implements TurnStream {
  answer?: TurnStream['answer'];
  firstReleasedAt?: number;
  private released = '';
  private opened = false;

  constructor(private readonly reply: FastifyReply) {}

  /** Whether any event was sent: from then on a failure can only be an `error` event. */
  get started(): boolean {
    return this.opened;
  }

  send(event: TurnStreamEvent): void {
    if (event.event === 'answer.delta') this.released += event.data.text;
    this.write(event.event, event.data);
  }

  /** The committed turn: the answer's rest (or its replacement), then the final body. */
  complete(response: TurnResponse): void {
    const { answer } = response;
    if (answer.startsWith(this.released)) {
      const rest = answer.slice(this.released.length);
      if (rest !== '') this.write('answer.delta', { text: rest });
    } else {
      this.write('answer.replaced', { answer });
    }
    this.write('turn.completed', response);
    this.reply.raw.end();
  }

  fail(body: ErrorBody): void {
    this.write('error', body);
    this.reply.raw.end();
  }

  private write(event: string, data: unknown): void {
    if (!this.opened) this.open();
    const raw = this.reply.raw;
    if (raw.destroyed || raw.writableEnded) return;
    raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private open(): void {
    this.opened = true;
    // The stream is written by hand from here on, with the headers set so far (request id, security headers).
    this.reply.hijack();
    const headers = Object.entries(this.reply.getHeaders()).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, typeof value === 'number' ? String(value) : value] as const],
    );
    this.reply.raw.writeHead(200, {
      ...Object.fromEntries(headers),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // Proxies that buffer responses (nginx) pass each event on at once.
      'x-accel-buffering': 'no',
    });
  }
}
