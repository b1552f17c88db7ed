import { intentSchema, IntentConfig } from '@agent/config';
import { foldText } from '@agent/contracts';
import { KeywordIndex, matchKeyword, tokenize } from './keyword-matcher';

const intent = (fields: Partial<IntentConfig> & Pick<IntentConfig, 'name' | 'agent'>): IntentConfig =>
  intentSchema.parse({ description: fields.name, domain: 'retail', ...fields });

const strategy = (keyword: string, text: string) => matchKeyword(tokenize(keyword), tokenize(text));

describe('tokenize', () => {
  it('folds accents and case and keeps only letter and digit tokens', () => {
    expect(foldText('Cobrança DEVOLUÇÃO Garantía')).toBe('cobranca devolucao garantia');
    expect(tokenize('Quero a 2ª via da COBRANÇA, pedido #123!')).toEqual([
      'quero',
      'a',
      '2a',
      'via',
      'da',
      'cobranca',
      'pedido',
      '123',
    ]);
    expect(tokenize('R$ 71,99')).toEqual(['r', '71', '99']);
    expect(tokenize('  ?!  ')).toEqual([]);
  });
});

describe('matchKeyword', () => {
  it('matches a single-word keyword only as a whole token, never as a prefix', () => {
    expect(strategy('cancela', 'cancela o pedido')).toBe('exact');
    expect(strategy('cancela', 'sim, pode cancelar')).toBeNull();
    expect(strategy('conta', 'contato com a loja')).toBeNull();
    expect(strategy('plan', 'I want a new plan')).toBe('exact');
  });

  it('ignores accents and case on both sides', () => {
    expect(strategy('cobrança', 'uma COBRANCA estranha')).toBe('exact');
    expect(strategy('devolucao', 'quero uma devolução')).toBe('exact');
    expect(strategy('solicitar devolução', 'SOLICITAR DEVOLUCAO agora')).toBe('exact');
    expect(strategy('envío', 'el envio no llegó')).toBe('exact');
  });

  it('matches a multi-word keyword in order with up to three inserted words', () => {
    expect(strategy('cancelar pedido', 'quero cancelar pedido')).toBe('exact');
    for (const text of [
      'quero cancelar meu pedido',
      'quero cancelar o meu pedido',
      'pode cancelar esse pedido',
      'gostaria de cancelar meu pedido',
      'cancelar o meu último pedido',
    ]) {
      expect(strategy('cancelar pedido', text)).toBe('ordered_tokens');
    }
    expect(strategy('cancelar pedido', 'cancelar a compra e depois ver o pedido')).toBeNull();
    expect(strategy('cancelar pedido', 'quero pedido e talvez cancelar depois')).toBeNull();
    expect(strategy('cancel order', 'please cancel the order')).toBe('ordered_tokens');
  });

  it('tolerates a user omitting short connectors of the keyword', () => {
    expect(strategy('qual é o meu plano', 'qual o meu plano')).toBe('ordered_content_tokens');
    expect(strategy('qual é o meu plano', 'qual meu plano')).toBe('ordered_content_tokens');
    expect(strategy('qual é o meu plano', 'quero ver minha fatura')).toBeNull();
    // Without a dropped connector the content strategy does not apply (ordered_tokens already covered it).
    expect(strategy('valor alto', 'valor muito muito muito muito alto')).toBeNull();
  });

  it('prefers the contiguous match over a gapped one for the same keyword', () => {
    expect(strategy('segunda via', 'quero a segunda via da conta')).toBe('exact');
  });
});

describe('KeywordIndex', () => {
  const cancel = intent({
    name: 'retail_order_cancel',
    agent: 'orders_agent',
    priority: 20,
    keywords: ['cancelar pedido'],
  });
  const tracking = intent({
    name: 'retail_order_tracking',
    agent: 'orders_agent',
    priority: 30,
    keywords: ['pedido', 'entrega'],
  });

  it('lets the lower priority win over a more exact match', () => {
    const match = new KeywordIndex([tracking, cancel]).match('quero cancelar meu pedido');
    expect(match).toMatchObject({
      intent: { name: 'retail_order_cancel' },
      keyword: 'cancelar pedido',
      strategy: 'ordered_tokens',
      confidence: 0.82,
    });
  });

  it('breaks a priority tie by strategy, then by keyword length, then by catalogue order', () => {
    const a = intent({ name: 'a', agent: 'billing_agent', priority: 10, keywords: ['segunda via boleto'] });
    const b = intent({ name: 'b', agent: 'billing_agent', priority: 10, keywords: ['boleto'] });
    expect(new KeywordIndex([a, b]).match('segunda via do boleto')).toMatchObject({
      intent: { name: 'b' },
      strategy: 'exact',
    });
    const long = intent({ name: 'long', agent: 'billing_agent', priority: 10, keywords: ['segunda via'] });
    const short = intent({ name: 'short', agent: 'billing_agent', priority: 10, keywords: ['via'] });
    expect(new KeywordIndex([short, long]).match('quero a segunda via')).toMatchObject({
      intent: { name: 'long' },
    });
    const first = intent({ name: 'first', agent: 'billing_agent', priority: 10, keywords: ['fatura'] });
    const second = intent({ name: 'second', agent: 'billing_agent', priority: 10, keywords: ['fatura'] });
    expect(new KeywordIndex([first, second]).match('fatura')).toMatchObject({ intent: { name: 'first' } });
  });

  it('skips disabled intents and returns null when nothing matches', () => {
    const disabled = intent({
      name: 'off',
      agent: 'billing_agent',
      priority: 1,
      keywords: ['pedido'],
      enabled: false,
    });
    expect(new KeywordIndex([disabled, tracking]).match('meu pedido')).toMatchObject({
      intent: { name: 'retail_order_tracking' },
      confidence: 0.85,
    });
    expect(new KeywordIndex([tracking]).match('bom dia')).toBeNull();
    expect(new KeywordIndex([tracking]).match('')).toBeNull();
  });
});
