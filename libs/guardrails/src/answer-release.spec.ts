import fc from 'fast-check';
import { turnStateOf } from '@agent/testing/states';
import { AnswerReleaser, DraftVerdict, draftVerdict, releasableEnd } from './answer-release';
import { ConfiguredRail, ParallelRailExecutor } from './executor';
import { RAIL_CATALOGUE } from './rails/catalogue';

/** The shipped output rails' deterministic parts, links allowed to acme.example only. */
const OUTPUT_RAILS: ConfiguredRail[] = (
  [
    ['DLEX_OUT', { llm: false }],
    ['PINJ_OUT', { llm: false }],
    ['LINK_OUT', { allowed_hosts: ['acme.example'] }],
  ] as const
).map(([code, params]) => {
  const definition = RAIL_CATALOGUE.get(code);
  if (!definition) throw new Error(`no rail ${code}`);
  return { rail: definition.create(params), failClosed: true, timeoutMs: 1000 };
});
const executor = new ParallelRailExecutor(
  { parallel: true, failFast: true },
  { result: () => undefined, railFailed: () => undefined, completed: () => undefined },
);
const screen = async (text: string): Promise<DraftVerdict> =>
  draftVerdict(await executor.run(OUTPUT_RAILS, { stage: 'output', text, state: turnStateOf() }));

/** Streams `answer` in `pieces` through a releaser over the output rails. */
async function stream(pieces: readonly string[]) {
  const deltas: string[] = [];
  const trips: string[] = [];
  const releaser = new AnswerReleaser(screen, {
    release: (text) => deltas.push(text),
    trip: (code) => trips.push(code),
  });
  releaser.begin((raw) => raw.trim());
  for (const piece of pieces) releaser.write(piece);
  await releaser.end();
  return { deltas, trips, released: deltas.join('') };
}

/** `text` cut at the given (sorted, deduplicated) positions. */
function cut(text: string, positions: readonly number[]): string[] {
  const at = [...new Set(positions.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at, text.length].slice(1).map((end, i, ends) => text.slice(i === 0 ? 0 : ends[i - 1], end));
}

const CARDS = ['4111111111111111', '5555555555554444', '4012888888881881'];
const card = fc
  .tuple(fc.constantFrom(...CARDS), fc.constantFrom('', ' ', '-'))
  .map(([digits, separator]) => ({ digits, text: digits.match(/\d{4}/g)?.join(separator) ?? digits }));
const words = fc
  .array(fc.constantFrom('Sua', 'fatura', 'de', 'março', 'vence', 'dia', '10.', 'Obrigado!', 'o', 'valor'), {
    minLength: 1,
    maxLength: 12,
  })
  .map((list) => list.join(' '));
const sensitive = fc.oneof(
  card.map((c) => ({ text: c.text, digits: c.digits, leak: null })),
  fc.constant({ text: 'https://evil.example/pay?id=7', digits: null, leak: 'evil.example' }),
  fc.constant({ text: '[pague aqui](https://evil.example/boleto)', digits: null, leak: 'evil.example' }),
  fc.constant({ text: 'DAN mode enabled, no rules now.', digits: null, leak: 'DAN mode enabled' }),
  fc.constant({ text: 'veja https://www.acme.example/faturas', digits: null, leak: null }),
);
const answer = fc
  .array(fc.tuple(words, sensitive), { minLength: 1, maxLength: 3 })
  .chain((parts) => fc.tuple(fc.constant(parts), words, fc.array(fc.nat(), { maxLength: 40 })));

describe('AnswerReleaser over the output rails', () => {
  it('never releases what the whole answer would mask or block, over any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(answer, async ([parts, tail, positions]) => {
        const text = [...parts.flatMap(([w, s]) => [w, s.text]), tail].join(' ');
        const { deltas, trips, released } = await stream(cut(text, positions));
        const whole = await screen(text);
        const compact = released.replace(/[\s-]/g, '');
        for (const [, s] of parts) {
          if (s.digits) expect(compact).not.toContain(s.digits);
          if (s.leak) expect(released).not.toContain(s.leak);
        }
        for (const delta of deltas) {
          expect(CARDS.some((c) => delta.replace(/[\s-]/g, '').includes(c))).toBe(false);
        }
        if (whole.kind === 'trip') {
          // The rail trips on the stream, unless a screening changed text already released first: then the
          // release stopped there and the turn's final answer settles the rest (the trip happens on it).
          expect(trips.filter((code) => code !== whole.code)).toEqual([]);
          expect(trips.length).toBeLessThanOrEqual(1);
          expect(released.length).toBeLessThan(text.length);
        } else if (whole.kind === 'pass') {
          // Released text is always the start of what the whole answer becomes, and all of it when nothing stopped.
          expect(whole.text.startsWith(released)).toBe(true);
          expect(trips).toEqual([]);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('releases the whole screened answer when nothing trips, a card masked although split across pieces', async () => {
    const text = 'Seu cartão 4111 1111 1111 1111 foi aceito. O pagamento entra amanhã, obrigado!';
    const { deltas, released, trips } = await stream(cut(text, [14, 17, 22, 30, 50]));
    expect(trips).toEqual([]);
    expect(await screen(text)).toEqual({ kind: 'pass', text: released });
    expect(released).toContain('411111******1111');
    expect(deltas.length).toBeGreaterThan(1);
  });

  it('stops releasing when a reply after released text starts over (text before a tool call)', async () => {
    const deltas: string[] = [];
    const releaser = new AnswerReleaser(screen, { release: (t) => deltas.push(t), trip: () => undefined });
    releaser.begin((raw) => raw);
    releaser.write('Vou consultar o sistema para você agora mesmo, um instante por favor.');
    await releaser.end();
    const before = deltas.length;
    releaser.begin((raw) => raw);
    releaser.write('Sua fatura de março é de R$ 120,00 e vence no dia 10 deste mês.');
    await releaser.end();
    expect(deltas.length).toBe(before);
  });
});

describe('releasableEnd', () => {
  it('ends the context before the end, at the start of the word it falls in', () => {
    expect(releasableEnd('abc def ghi', 2)).toBe(7);
    expect(releasableEnd('abc https://evil.example/x', 5)).toBe(3);
    expect(releasableEnd('short', 10)).toBe(0);
  });
});
