import { turnAnswer, turnText } from './turn-frame';

describe('turn frame readers', () => {
  it('reads the sanitized text once the input rails ran, else the message', () => {
    expect(turnText({ user_text: 'meu cartão 4111', sanitized_input: 'meu cartão [card]' })).toBe(
      'meu cartão [card]',
    );
    expect(turnText({ user_text: 'oi' })).toBe('oi');
  });

  it('reads the released answer once the output rails ran, else the draft', () => {
    expect(turnAnswer({ answer: 'rascunho', final_answer: 'liberada' })).toBe('liberada');
    expect(turnAnswer({ answer: 'rascunho' })).toBe('rascunho');
    expect(turnAnswer({})).toBe('');
  });
});
