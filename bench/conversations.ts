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

/** Every scripted message, for the fake LLM's lookups. */
export function scriptIndex(conversations: ScriptedConversation[]): Map<string, ScriptedTurn> {
  const index = new Map<string, ScriptedTurn>();
  for (const conversation of conversations) for (const turn of conversation.turns) index.set(turn.text, turn);
  return index;
}
