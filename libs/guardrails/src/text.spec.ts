import { cutAtSentence } from './text';

describe('cutAtSentence', () => {
  it('keeps a text within the limit as it is', () => {
    expect(cutAtSentence('Olá. Tudo bem?', 20)).toBe('Olá. Tudo bem?');
  });

  it('cuts at the last sentence end inside the limit (., ! and ?)', () => {
    const text = 'Primeira frase. Segunda frase! Terceira frase? Quarta frase bem mais longa que as outras.';
    expect(cutAtSentence(text, 50)).toBe('Primeira frase. Segunda frase! Terceira frase?');
    expect(cutAtSentence(text, 50).length).toBeLessThanOrEqual(50);
  });

  it('does not take a decimal point or an abbreviation inside a word for a sentence end', () => {
    expect(cutAtSentence('O valor é R$ 99.90 por mês e vence dia dez de cada mês', 30)).toBe(
      'O valor é R$ 99.90 por mês e…',
    );
  });

  it('cuts at the last word, marked with an ellipsis, when no sentence end keeps half of the limit', () => {
    const bounded = cutAtSentence('Sim. ' + 'palavra '.repeat(50), 60);
    expect(bounded.length).toBeLessThanOrEqual(60);
    expect(bounded).toMatch(/palavra…$/);
    expect(cutAtSentence('x'.repeat(100), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});
