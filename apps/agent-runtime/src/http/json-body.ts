import type { FastifyInstance } from 'fastify';
import { BodyRefusedError, RequestValidationError } from '../app.errors';
import { MAX_JSON_DEPTH } from './request-rules';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** True when a JSON text nests objects and arrays deeper than `limit` (brackets inside strings do not count). */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  const QUOTE = 0x22;
  const BACKSLASH = 0x5c;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      // An escaped character (\" included) is skipped whole.
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === 0x7b || code === 0x5b) {
      depth++;
      if (depth > limit) return true;
    } else if (code === 0x7d || code === 0x5d) {
      depth--;
    }
  }
  return false;
}

/** `charset=` of a content type, lower-cased, or null when there is none. */
function charsetOf(contentType: string): string | null {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return match ? match[1].toLowerCase() : null;
}

/**
 * The only body the API takes: `application/json` in UTF-8. Every other media type (forms, text, UTF-16 JSON) is a
 * 415; bytes that are not UTF-8 and bodies nested deeper than MAX_JSON_DEPTH are a 400 before anything parses them;
 * the parse itself is fastify's (it refuses `__proto__` and `constructor.prototype` keys). An empty body is no body,
 * as when the content type is left out.
 */
export function registerJsonBodyParser(fastify: FastifyInstance): void {
  const parse = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = charsetOf(String(request.headers['content-type']));
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      done(
        new BodyRefusedError(
          'UNSUPPORTED_MEDIA_TYPE',
          `unsupported charset ${charset}: send application/json in UTF-8`,
        ),
        undefined,
      );
      return;
    }
    let text: string;
    try {
      text = typeof body === 'string' ? body : UTF8.decode(body);
    } catch {
      done(new BodyRefusedError('BAD_REQUEST', 'the body is not valid UTF-8'), undefined);
      return;
    }
    // No body at all: the route's body DTO decides whether it may be left out (RequestValidationPipe).
    if (text === '') {
      done(null, undefined);
      return;
    }
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      done(
        new RequestValidationError([
          { field: 'body', errors: [`JSON nested deeper than ${MAX_JSON_DEPTH} levels`] },
        ]),
        undefined,
      );
      return;
    }
    void parse(request, text, done);
  });
}
