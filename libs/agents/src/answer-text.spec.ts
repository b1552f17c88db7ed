import { answerPrefix, stripAgentPrefix } from './answer-text';
import { fillTemplate } from './transaction-settings';

describe('stripAgentPrefix', () => {
  const prefix = answerPrefix(['billing_agent', 'orders_agent', 'product_agent', 'Agente Telecom Contas']);

  it.each([
    ['billing_agent: Sua fatura vence dia 10.', 'Sua fatura vence dia 10.'],
    ['[orders_agent] - Pedido em separação.', 'Pedido em separação.'],
    ['**Supervisor**: Tudo certo.', 'Tudo certo.'],
    ['Agente Telecom Contas: Olá!', 'Olá!'],
    ['product_agent: billing_agent: duplo', 'duplo'],
    ['Agente Telecom Contas: billing_agent: duplo', 'duplo'],
  ])('removes the prefix of %p', (input, expected) => {
    expect(stripAgentPrefix(input, prefix)).toBe(expected);
  });

  it('keeps an answer that only mentions an agent later on', () => {
    expect(stripAgentPrefix('Falei com o billing_agent: tudo ok.', prefix)).toBe(
      'Falei com o billing_agent: tudo ok.',
    );
  });
});

describe('fillTemplate', () => {
  it('fills placeholders, collapses the spaces an empty one leaves and keeps unknown ones visible', () => {
    expect(
      fillTemplate('{validation} Confirma {operation}? {oops}', { validation: '', operation: 'a troca' }),
    ).toBe('Confirma a troca? {oops}');
  });
});
