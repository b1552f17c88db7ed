import { z } from 'zod';
import { confidenceSchema, describeIssues, parseJsonObject, structuredOutput } from './structured-output';

describe('parseJsonObject', () => {
  it.each([
    ['{"decision":"CONTINUE","confidence":0.9}', { decision: 'CONTINUE', confidence: 0.9 }],
    ['```json\n{"a":1}\n```', { a: 1 }],
    ['Sure! Here it is: {"a": {"b": "}"}} hope it helps', { a: { b: '}' } }],
    ['  {"x": "with \\"quotes\\""}  ', { x: 'with "quotes"' }],
    ['{see below} then {"a": 1}', { a: 1 }],
    ['an open { brace, then {"a": 1}', { a: 1 }],
  ])('extracts the one object of %j', (text, expected) => {
    expect(parseJsonObject(text)).toEqual({ ok: true, object: expected });
  });

  it.each([
    'not-json',
    '',
    '   ',
    '[1,2]',
    '{"unterminated": ',
    'null',
    '{"a": 1,}',
    '{"a": {"b": 1}, oops}',
  ])('finds no object in %j', (text) => {
    expect(parseJsonObject(text)).toEqual({ ok: false, problem: expect.any(String) });
  });

  it('treats two objects as an invalid answer, not as "take the first"', () => {
    expect(parseJsonObject('{"decision": "CONTINUE"}\n{"decision": "ROUTE"}')).toEqual({
      ok: false,
      problem: 'more than one JSON object in the answer',
    });
    expect(parseJsonObject('```json\n{"a": 1}\n```\nor maybe ```json\n{"a": 2}\n```').ok).toBe(false);
  });

  it('finds nothing in a non-string', () => {
    expect(parseJsonObject(null).ok).toBe(false);
    expect(parseJsonObject(undefined).ok).toBe(false);
  });
});

describe('confidenceSchema', () => {
  it.each([0, 0.5, 1])('accepts %j', (value) => {
    expect(confidenceSchema.parse(value)).toBe(value);
  });

  it.each(['0.9', '', null, true, -0.01, 1.01, Number.NaN, Number.POSITIVE_INFINITY])(
    'rejects %j without coercing it',
    (value) => {
      expect(confidenceSchema.safeParse(value).success).toBe(false);
    },
  );
});

describe('structuredOutput', () => {
  it('derives a strict JSON schema once, with optional fields required but nullable', () => {
    const output = structuredOutput(
      'verdict',
      z.object({
        decision: z.enum(['YES', 'NO']),
        confidence: confidenceSchema,
        reason: z.string().nullish(),
      }),
    );
    expect(output.jsonSchema).toMatchObject({
      name: 'verdict',
      strict: true,
      schema: {
        type: 'object',
        required: ['decision', 'confidence', 'reason'],
        additionalProperties: false,
        properties: {
          decision: { type: 'string', enum: ['YES', 'NO'] },
          confidence: { type: 'number', minimum: 0, maximum: 1 },
          reason: { type: 'string', nullable: true },
        },
      },
    });
  });

  it('describes the answer with the wire schema when validation is looser', () => {
    const output = structuredOutput(
      'facts',
      z.object({ facts: z.array(z.unknown()) }),
      z.object({ facts: z.array(z.object({ key: z.string() })) }),
    );
    expect(output.schema.safeParse({ facts: ['anything'] }).success).toBe(true);
    expect(output.jsonSchema.schema).toMatchObject({
      properties: { facts: { items: { properties: { key: { type: 'string' } } } } },
    });
  });

  it('refuses at definition a schema a strict provider cannot take', () => {
    expect(() => structuredOutput('bad', z.object({ reason: z.string().optional() }))).toThrow();
  });
});

describe('describeIssues', () => {
  it('lists each issue with its path', () => {
    const result = z.object({ a: z.number(), b: z.object({ c: z.string() }) }).safeParse({ a: 'x', b: {} });
    expect(result.success).toBe(false);
    if (!result.success) {
      expect(describeIssues(result.error)).toBe('a: Expected number, received string; b.c: Required');
    }
  });
});
