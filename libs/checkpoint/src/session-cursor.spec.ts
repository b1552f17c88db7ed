import { InvalidCursorError } from './checkpoint.errors';
import { decodeSessionCursor, encodeSessionCursor } from './session-cursor';

const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('session list cursor', () => {
  it("keeps Postgres's microseconds and a JavaScript date's milliseconds as they are", () => {
    for (const instant of ['2026-12-01T06:00:00.123456Z', '2026-12-01T06:00:00.123Z']) {
      expect(decodeSessionCursor(encodeSessionCursor(instant, 'acme:s-1'))).toEqual({
        updated_at: instant,
        conversation_key: 'acme:s-1',
      });
    }
  });

  it('refuses any other instant: other precisions, offsets, impossible dates', () => {
    for (const instant of [
      '2026-12-01T06:00:00.1234Z',
      '2026-12-01T06:00:00Z',
      '2026-12-01T06:00:00.123456+01:00',
      '2026-02-30T06:00:00.123456Z',
    ]) {
      expect(() => decodeSessionCursor(forge([instant, 'acme:s-1']))).toThrow(InvalidCursorError);
    }
  });
});
