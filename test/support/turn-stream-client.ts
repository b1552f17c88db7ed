/** One server-sent event of a streamed turn, with when (Date.now()) the client read it. */
export interface TurnStreamEvent {
  event: string;
  data: Record<string, unknown>;
  receivedAt: number;
}

export interface TurnStreamOptions {
  headers?: Record<string, string>;
  /** Disconnects once this holds. */
  stopAfter?: (events: TurnStreamEvent[]) => boolean;
  /** Runs (awaited) after each read, while the stream stays open. */
  meanwhile?: (events: TurnStreamEvent[]) => Promise<void>;
}

/**
 * POSTs a message to `baseUrl` with `Accept: text/event-stream` and reads its events (docs/api.md#streaming-the-answer):
 * the events in order, the answer deltas' texts and the final event's body.
 */
export async function streamTurn(baseUrl: string, body: unknown, options: TurnStreamOptions = {}) {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/channels/web/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...options.headers },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const events: TurnStreamEvent[] = [];
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  while (reader) {
    const { value, done } = await reader.read();
    if (done) break;
    const receivedAt = Date.now();
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? '{}';
      events.push({ event, data: JSON.parse(data) as Record<string, unknown>, receivedAt });
    }
    if (options.stopAfter?.(events)) {
      controller.abort();
      break;
    }
    await options.meanwhile?.(events);
  }
  const deltas = events.filter((e) => e.event === 'answer.delta').map((e) => String(e.data.text));
  const final = events.find((e) => e.event === 'turn.completed')?.data;
  return { response, events, deltas, final };
}
