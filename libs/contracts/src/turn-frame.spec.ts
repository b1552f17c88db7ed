import { turnStateOf } from '@agent/testing/states';
import { routedTurn, turnAnswer, turnText } from './turn-frame';

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

  it('reads the route and intent once routing decided, and refuses a turn not routed yet', () => {
    const routed = routedTurn(turnStateOf({ route: 'billing_agent', intent: 'billing_invoice_explanation' }));
    expect(routed).toMatchObject({ route: 'billing_agent', intent: 'billing_invoice_explanation' });
    expect(() => routedTurn(turnStateOf({ route: 'billing_agent' }))).toThrow(
      'turn 1 of default:s-1 has not been routed',
    );
    expect(() => routedTurn(turnStateOf())).toThrow('has not been routed');
  });
});
