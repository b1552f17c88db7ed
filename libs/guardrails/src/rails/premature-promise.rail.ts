import { z } from 'zod';
import {
  foldText,
  isToolCallResult,
  type McpToolResult,
  type TransactionEvidence,
  type TurnState,
  turnToolResults,
} from '@agent/contracts';
import { RailAction, RailEvaluation } from '../rail.types';
import { sentences } from '../text';
import { llmParamsShape } from './model-verdict';
import { defineRail } from './rail-definition';

const PT_DONE =
  'cancelad|estornad|reembolsad|alterad|ativad|desativad|contratad|registrad|efetuad|realizad|processad|agendad|bloquead|desbloquead|aprovad|isentad|creditad|concluid|trocad|devolvid';
const EN_DONE =
  'cancell?ed|refunded|changed|updated|activated|deactivated|processed|completed|scheduled|blocked|unblocked|upgraded|downgraded|submitted|registered|credited|waived|approved|reversed|returned';

/** Statements that an operation happened or certainly will (accent-free lower-case). */
export const CLAIM_PATTERNS: readonly RegExp[] = [
  /\b(ja )?(cancelei|cancelamos|estornei|estornamos|reembolsei|reembolsamos|alterei|alteramos|ativei|ativamos|desativei|desativamos|contratei|contratamos|registrei|registramos|efetuei|efetuamos|realizei|realizamos|processei|processamos|agendei|agendamos|bloqueei|bloqueamos|desbloqueei|desbloqueamos|solicitei|solicitamos|troquei|trocamos|aprovei|aprovamos|isentei|isentamos|creditei|creditamos)\b/,
  new RegExp(`\\b(foi|foram|esta|estao|ficou|ficaram|sera|serao)\\b.{0,25}\\b(${PT_DONE})[oa]s?\\b`),
  /\bcom sucesso\b/,
  /\bprotocolo\b.{0,20}\d{5,}/,
  new RegExp(`\\b(i|we)( have|'ve)?( just| already)? (${EN_DONE})\\b`),
  new RegExp(`\\b(has|have|was|were|is|are|will)( been| be)?( now)?( successfully)? (${EN_DONE})\\b`),
  /\bsuccessfully\b/,
  /\b(protocol|ticket|confirmation|case|reference) (number|no\.?|#|id)?\s*:?\s*#?[a-z]{0,4}\d{5,}/,
];

/** A claim preceded by one of these, in the same sentence, is conditional ("se você confirmar, ..."). */
const CONDITIONAL =
  /\b(se|caso|assim que|quando|apos|depois que|depois de|para que|antes de|if|once|when|after|as soon as|before|so that)\b/;
const NEGATION = /\b(nao|nem|not|never)\b/;

export interface ClaimHit {
  sentence: string;
  match: string;
}

/** Unconditional, affirmative statements that an operation was (or will certainly be) carried out. */
export function findOperationClaims(answer: string): ClaimHit[] {
  const hits: ClaimHit[] = [];
  for (const raw of sentences(answer)) {
    const sentence = foldText(raw);
    for (const pattern of CLAIM_PATTERNS) {
      const found = pattern.exec(sentence);
      if (!found) continue;
      const before = sentence.slice(0, found.index);
      if (CONDITIONAL.test(before) || NEGATION.test(before.slice(-20))) continue;
      hits.push({ sentence: raw, match: found[0] });
      break;
    }
  }
  return hits;
}

/** Tool results and transaction evidence that confirm an operation ran in this conversation. */
export function operationEvidence(state: Readonly<TurnState>): (TransactionEvidence | McpToolResult)[] {
  return [
    ...(state.transaction_evidence ?? []),
    ...(state.relevant_transaction_evidence ?? []),
    ...(state.last_transaction_evidence ? [state.last_transaction_evidence] : []),
    // A request for parameters ran nothing; a failed call confirms nothing.
    ...turnToolResults(state)
      .filter(isToolCallResult)
      .filter((result) => result.ok),
  ];
}

/** Protocol, ticket or confirmation numbers the answer cites. */
export function citedNumbers(answer: string): string[] {
  const pattern =
    /\b(protocolo|protocol|ticket|chamado|confirmation|confirmacao|case|reference|referencia)\b[^0-9.!?]{0,20}(\d{5,})/g;
  return [...foldText(answer).matchAll(pattern)].map((m) => m[2]);
}

const GUIDANCE =
  'Do not state or promise that the operation was done or will certainly be done: no tool result confirms it. Say what is still needed (data or confirmation) or what the next step is, and never invent protocol numbers.';

const REVPREC_INSTRUCTION =
  'block an answer stating or promising an operation (cancellation, refund, change, activation, protocol) was or will surely be done when the tool evidence does not confirm it.';

/** REVPREC's deterministic part: a claim without evidence, or a protocol number the evidence lacks. */
function screenClaims(text: string, state: Readonly<TurnState>): RailEvaluation {
  const evidence = operationEvidence(state);
  const claims = findOperationClaims(text);
  const evidenceText = JSON.stringify(evidence);
  if (claims.length > 0 && evidence.length === 0) {
    return {
      action: RailAction.RETRY,
      reason: 'the answer claims an operation that no tool result confirms',
      guidance: GUIDANCE,
      metadata: { source: 'screen', claims: claims.map((c) => c.match) },
    };
  }
  const invented = citedNumbers(text).filter((n) => !evidenceText.includes(n));
  if (invented.length > 0) {
    return {
      action: RailAction.RETRY,
      reason: 'the answer cites a protocol number that no tool result contains',
      guidance: GUIDANCE,
      metadata: { source: 'screen', numbers: invented },
    };
  }
  return {
    action: RailAction.ALLOW,
    reason: claims.length > 0 ? 'claims backed by tool evidence' : 'no operation claim',
    metadata: { source: 'screen', evidence_items: evidence.length },
  };
}

/**
 * REVPREC: the answer promises an operation no tool result confirms → RETRY with guidance. A cited protocol
 * number must also appear in the evidence, so an invented number is caught even after a successful tool call.
 */
export const prematurePromiseRail = defineRail({
  code: 'REVPREC',
  stages: ['output'],
  params: z.object({ ...llmParamsShape, llm: z.boolean().default(false) }).strict(),
  usesLlm: (params) => params.llm,
  create: (params) => ({
    code: 'REVPREC',
    evaluate: ({ text, state }) => Promise.resolve(screenClaims(text, state)),
    modelCheck: ({ state }) => {
      if (!params.llm) return null;
      const evidence = operationEvidence(state);
      return {
        instruction: REVPREC_INSTRUCTION,
        minConfidence: params.min_confidence,
        blockAction: RailAction.RETRY,
        guidance: GUIDANCE,
        evidence: `Tool evidence (JSON): ${evidence.length > 0 ? JSON.stringify(evidence).slice(0, 2000) : 'none'}`,
      };
    },
  }),
});
