/**
 * The scripted conversation set of the stickiness benchmark and the demo. Each user turn carries the label the
 * scripted continuity classifier answers and, for routed turns, the intent the scripted router answers.
 */
export type ContinuityLabel = 'CONTINUE' | 'ROUTE' | 'HUMAN_HANDOFF' | 'END_SESSION';

export interface ScriptedTurn {
  text: string;
  label: ContinuityLabel;
  /** Intent the router LLM stage answers when it is asked about this message. */
  intent?: string;
}

export interface ScriptedConversation {
  id: string;
  agentId: 'telecom_contas' | 'retail_orders';
  turns: ScriptedTurn[];
}

const R = (text: string, intent: string): ScriptedTurn => ({ text, label: 'ROUTE', intent });
const C = (text: string): ScriptedTurn => ({ text, label: 'CONTINUE' });
const H = (text: string): ScriptedTurn => ({ text, label: 'HUMAN_HANDOFF' });
const E = (text: string): ScriptedTurn => ({ text, label: 'END_SESSION' });

const INVOICE = 'billing_invoice_explanation';
const PRODUCT = 'product_services_information';
const CANCEL = 'retail_order_cancel';
const TRACK = 'retail_order_tracking';
const SUPPORT = 'retail_support_exchange_return';

/** The stickiness specification's Portuguese example table, preceded by the turn that makes product_agent active. */
export const SEED_TABLE_PT: ScriptedConversation = {
  id: 'seed-pt',
  agentId: 'telecom_contas',
  turns: [
    R('Qual é o meu plano?', PRODUCT),
    C('o que está incluso?'),
    R('agora quero contestar uma cobrança', INVOICE),
    H('quero falar com uma pessoa'),
    E('obrigado, pode encerrar'),
  ],
};

export const SEED_TABLE_EN: ScriptedConversation = {
  id: 'seed-en',
  agentId: 'telecom_contas',
  turns: [
    R('What is my current plan?', PRODUCT),
    C('what does it include?'),
    R('now I want to dispute a charge on my bill', INVOICE),
    H('I want to talk to a person'),
    E('thanks, you can close this'),
  ],
};

const TELECOM: ScriptedTurn[][] = [
  [
    R('Minha fatura veio alta este mês', INVOICE),
    C('por que o valor subiu?'),
    C('e esse item de serviços digitais?'),
    C('entendi, e quando vence?'),
    R('quais serviços eu tenho ativos no plano?', PRODUCT),
    C('pode detalhar o primeiro?'),
    E('era só isso, obrigado, pode encerrar'),
  ],
  [
    R('Quero a segunda via do boleto', INVOICE),
    C('pode mandar por e-mail?'),
    C('e o código de barras?'),
    H('prefiro falar com um atendente'),
    C('ok, aguardo'),
  ],
  [
    R('Qual é o meu plano?', PRODUCT),
    C('o que está incluso?'),
    C('tem roaming internacional?'),
    R('agora quero contestar uma cobrança', INVOICE),
    C('foi cobrado duas vezes'),
    C('R$ 49,90'),
    E('obrigado, pode encerrar'),
  ],
  [
    R('My bill is higher than usual', INVOICE),
    C('why did it go up?'),
    C('what is this roaming charge?'),
    C('ok, and the due date?'),
    R('does my plan include international roaming?', PRODUCT),
    C('how much data do I get?'),
    E('that is all, thanks, goodbye'),
  ],
  [
    R('Quais benefícios meu plano tem?', PRODUCT),
    C('e o pacote de internet?'),
    C('quanto custa para aumentar?'),
    H('quero falar com uma pessoa'),
    E('obrigado, pode encerrar'),
  ],
  [
    R('Quero entender minha conta', INVOICE),
    C('esse valor de 12 reais é o quê?'),
    C('posso contestar?'),
    C('sim, quero contestar'),
    R('e meu plano tem assinatura de streaming?', PRODUCT),
    C('como ativo?'),
    E('valeu, pode finalizar o atendimento'),
  ],
  [
    R('What services do I have active?', PRODUCT),
    C('can you cancel the music one?'),
    R('actually, I need a copy of my last invoice', INVOICE),
    C('send it to my email please'),
    H('let me speak with a human agent'),
    C('fine, I will wait'),
  ],
  [
    R('Meu boleto venceu ontem', INVOICE),
    C('ainda posso pagar?'),
    C('tem juros?'),
    C('quanto fica?'),
    R('qual é o meu plano atual?', PRODUCT),
    E('obrigado, era só isso, pode encerrar'),
  ],
  [
    R('Tenho internet ilimitada?', PRODUCT),
    C('e para redes sociais?'),
    C('e no roaming?'),
    R('minha fatura veio com cobrança de roaming', INVOICE),
    C('eu não viajei'),
    H('quero falar com alguém de verdade'),
  ],
  [
    R('I was charged twice this month', INVOICE),
    C('both on the 5th'),
    C('49.90 each'),
    C('can you refund one?'),
    E('thank you, you can end the chat now'),
  ],
  [
    R('Quero saber do meu pacote de dados', PRODUCT),
    C('quanto eu já usei?'),
    C('e quando renova?'),
    C('ok'),
    R('e quanto está minha conta deste mês?', INVOICE),
    C('pode detalhar?'),
    E('perfeito, pode encerrar'),
  ],
  [
    R('Is there a cheaper plan for me?', PRODUCT),
    C('what about the 20GB one?'),
    C('does it keep my number?'),
    H('I would rather talk to a person about this'),
    E('thanks, bye, close the session'),
  ],
];

const RETAIL: ScriptedTurn[][] = [
  [
    R('Onde está meu pedido 123?', TRACK),
    C('e o código de rastreio?'),
    C('qual transportadora?'),
    R('quero cancelar o pedido 456', CANCEL),
    C('é o 456 mesmo'),
    E('obrigado, pode encerrar'),
  ],
  [
    R('Meu produto chegou quebrado', SUPPORT),
    C('é o pedido 789'),
    C('prefiro trocar'),
    C('a tela está rachada'),
    H('quero falar com um atendente'),
    C('ok'),
  ],
  [
    R('Where is my order 321?', TRACK),
    C('when will it arrive?'),
    C('can I change the address?'),
    R('I want to return the shoes from order 654', SUPPORT),
    C('they are too small'),
    E('thanks, that is all, please close'),
  ],
  [
    R('Quero cancelar meu pedido', CANCEL),
    C('o número é 555'),
    C('comprei por engano'),
    R('e o pedido 777, já saiu para entrega?', TRACK),
    C('qual a previsão?'),
    E('valeu, pode finalizar'),
  ],
  [
    R('A entrega está atrasada', TRACK),
    C('o pedido é 888'),
    C('já faz dez dias'),
    H('quero falar com uma pessoa agora'),
    E('obrigado, pode encerrar'),
  ],
  [
    R('Como faço para devolver um produto?', SUPPORT),
    C('é o pedido 999'),
    C('não gostei da cor'),
    C('tenho 7 dias ainda?'),
    R('e onde está meu outro pedido, o 111?', TRACK),
    C('ok, obrigado pela informação'),
    E('era isso, pode encerrar'),
  ],
  [
    R('I need to cancel order 222', CANCEL),
    C('yes, order 222'),
    C('I found it cheaper elsewhere'),
    R('also, where is order 333?', TRACK),
    C('thanks for the update'),
    H('can I talk to a real person?'),
  ],
  [
    R('Quero trocar o tamanho da camisa', SUPPORT),
    C('pedido 444'),
    C('quero o G'),
    C('pode ser na mesma cor'),
    E('obrigado, pode encerrar o atendimento'),
  ],
  [
    R('Meu pedido 135 não chegou', TRACK),
    C('consta como entregue mas não recebi'),
    C('o que eu faço?'),
    H('quero um atendente humano'),
    C('aguardo o contato'),
  ],
  [
    R('The product has a defect', SUPPORT),
    C('order 246'),
    C('it does not turn on'),
    C('I want a replacement'),
    R('and can you track order 357 for me?', TRACK),
    E('great, thanks, goodbye'),
  ],
  [
    R('Quero cancelar a compra que fiz ontem', CANCEL),
    C('pedido 468'),
    C('sim, tenho certeza'),
    R('quanto tempo leva o estorno? e onde está o pedido 579?', TRACK),
    E('obrigado, pode finalizar'),
  ],
  [
    R('Posso rastrear minha encomenda?', TRACK),
    C('é o pedido 680'),
    C('e o horário da entrega?'),
    C('perfeito'),
    R('quero devolver o pedido 791, veio errado', SUPPORT),
    C('veio outro modelo'),
    E('valeu, pode encerrar'),
  ],
];

export const BENCH_CONVERSATIONS: ScriptedConversation[] = [
  SEED_TABLE_PT,
  SEED_TABLE_EN,
  ...TELECOM.map((turns, i) => ({ id: `telecom-${i + 1}`, agentId: 'telecom_contas' as const, turns })),
  ...RETAIL.map((turns, i) => ({ id: `retail-${i + 1}`, agentId: 'retail_orders' as const, turns })),
];

/** Every scripted message, for the fake LLM's lookups. */
export function scriptIndex(conversations: ScriptedConversation[]): Map<string, ScriptedTurn> {
  const index = new Map<string, ScriptedTurn>();
  for (const conversation of conversations) for (const turn of conversation.turns) index.set(turn.text, turn);
  return index;
}
