import { Agent as HttpAgent, IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ClientOptions } from 'openai';

export type Fetch = NonNullable<ClientOptions['fetch']>;

/**
 * How long an idle pooled connection is kept: below the 5 s idle timeout of common model servers (uvicorn,
 * Node) that do not announce it, so a request never goes out on a connection the server is closing. A server
 * that announces a shorter `Keep-Alive: timeout` is honoured by the agent.
 */
const IDLE_SOCKET_MS = 4000;

/** How much of an error response's body is kept for its message. */
const ERROR_BODY_BYTES = 500;

/** Statuses whose response has no body (a Response with one cannot be constructed). */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 204, 205, 304]);

/**
 * One keep-alive connection pool per model endpoint origin, shared by every profile and client that calls it,
 * and the `fetch` the openai SDK sends through it. Node's global fetch (a full WHATWG implementation) costs
 * several times the CPU of a plain http request per call; this fetch is a plain request whose buffered answer
 * becomes a Response. Deadlines are the SDK's own (its timeout aborts the request's signal): nothing here arms
 * a timer per call.
 */
export class ConnectionPools {
  private readonly agents = new Map<string, HttpAgent>();
  /** The body of each error response, by the headers object the SDK keeps in its error: for messages. */
  private readonly errorBodies = new WeakMap<Headers, string>();

  /** The fetch for requests to `baseUrl`'s origin. */
  fetchFor(baseUrl: string): Fetch {
    const { origin, protocol } = new URL(baseUrl);
    let agent = this.agents.get(origin);
    if (!agent) {
      const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
      agent = protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
      this.agents.set(origin, agent);
    }
    const send = protocol === 'https:' ? httpsRequest : httpRequest;
    const pool = agent;
    return (input, init) => pooledFetch(send, pool, input, init, this.errorBodies);
  }

  /** The start of the body of the error response that had `headers` (an APIError's headers). */
  errorBody(headers: Headers | undefined): string | undefined {
    return headers ? this.errorBodies.get(headers) : undefined;
  }

  /** Closes every pooled connection (at shutdown). */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

function pooledFetch(
  send: typeof httpRequest,
  agent: HttpAgent,
  input: string | URL | Request,
  init: RequestInit = {},
  errorBodies: WeakMap<Headers, string>,
): Promise<Response> {
  const signal = init.signal ?? null;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const body = init.body ?? null;
  if (body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
    return Promise.reject(new TypeError('the model transport sends only string or byte bodies'));
  }
  const url = typeof input === 'string' || input instanceof URL ? input : input.url;
  return new Promise<Response>((resolve, reject) => {
    const onAbort = () => request.destroy(abortReason(signal));
    const fail = (error: Error) => {
      signal?.removeEventListener('abort', onAbort);
      // As fetch does: a network failure is a TypeError whose cause is the system error. The SDK keeps a cause
      // only under an Error of its own realm, and the cause's code says what failed (ECONNREFUSED, ENOTFOUND).
      reject(error.name === 'AbortError' ? error : new TypeError('fetch failed', { cause: error }));
    };
    const request = send(
      url,
      { method: init.method ?? 'GET', agent, headers: headerRecord(init.headers) },
      (response) => {
        if (isEventStream(response)) {
          resolve(streamedResponse(response, () => signal?.removeEventListener('abort', onAbort)));
          return;
        }
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', fail);
        response.on('end', () => {
          signal?.removeEventListener('abort', onAbort);
          const status = response.statusCode ?? 0;
          const body = Buffer.concat(chunks);
          const answer = new Response(NULL_BODY_STATUSES.has(status) ? null : body, {
            status,
            statusText: response.statusMessage,
            headers: responseHeaders(response),
          });
          if (status >= 400) {
            errorBodies.set(answer.headers, body.subarray(0, ERROR_BODY_BYTES).toString('utf8'));
          }
          resolve(answer);
        });
      },
    );
    request.on('error', fail);
    signal?.addEventListener('abort', onAbort, { once: true });
    request.end(body ?? undefined);
  });
}

/** A successful streamed answer (`stream: true`): handed over as it arrives, never buffered whole. */
function isEventStream(response: IncomingMessage): boolean {
  const status = response.statusCode ?? 0;
  return status < 300 && (response.headers['content-type'] ?? '').startsWith('text/event-stream');
}

function streamedResponse(response: IncomingMessage, ended: () => void): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      response.on('data', (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)));
      response.on('end', () => {
        ended();
        controller.close();
      });
      // A destroyed request (the caller's signal, the deadline) ends the stream with an error, never as complete.
      const failed = (error: Error) => {
        ended();
        controller.error(error);
      };
      response.on('error', failed);
      response.on('close', () => {
        if (!response.complete) failed(new Error('the model stream was cut'));
      });
    },
    cancel() {
      ended();
      response.destroy();
    },
  });
  return new Response(body, {
    status: response.statusCode,
    statusText: response.statusMessage,
    headers: responseHeaders(response),
  });
}

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (headers === undefined) return record;
  new Headers(headers).forEach((value, name) => {
    record[name] = value;
  });
  return record;
}

function responseHeaders(response: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
  }
  return headers;
}

/**
 * What the SDK takes for a cancelled fetch: an Error named AbortError (the signal's own reason is a DOMException,
 * which the SDK does not recognize as an Error where the realms differ, as under jest).
 */
function abortReason(signal: AbortSignal | null): Error {
  const error = new Error('the model request was aborted', { cause: signal?.reason });
  error.name = 'AbortError';
  return error;
}
