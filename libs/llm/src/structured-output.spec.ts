import { parseJsonObject } from './structured-output';

describe('parseJsonObject', () => {
  it.each([
    ['{"decision":"CONTINUE","confidence":0.9}', { decision: 'CONTINUE', confidence: 0.9 }],
    ['```json\n{"a":1}\n```', { a: 1 }],
    ['Sure! Here it is: {"a": {"b": "}"}} hope it helps', { a: { b: '}' } }],
    ['  {"x": "with \\"quotes\\""}  ', { x: 'with "quotes"' }],
  ])('extracts one object from %j', (text, expected) => {
    expect(parseJsonObject(text)).toEqual(expected);
  });

  it.each(['not-json', '', '[1,2]', '{"unterminated": ', 'null'])('returns null for %j', (text) => {
    expect(parseJsonObject(text)).toBeNull();
  });

  it('returns null for non-strings', () => {
    expect(parseJsonObject(null)).toBeNull();
    expect(parseJsonObject(undefined)).toBeNull();
  });
});
