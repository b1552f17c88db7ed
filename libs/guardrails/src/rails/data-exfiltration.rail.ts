import { z } from 'zod';
import type { AgentState } from '@agent/contracts';
import { findPii, maskCardKeepingLast4, PiiMatch, placeholder, replacePii, digitsOnly } from '../pii';
import { RailAction, RailEvaluation } from '../rail.types';
import { firstMatch, screenForms } from '../text';
import { llmParamsShape } from './model-verdict';
import { defineRail } from './rail-definition';

/** Attempts to obtain other people's or bulk data (folded text, Portuguese, English, Spanish and German). */
export const EXFILTRATION_PATTERNS: readonly RegExp[] = [
  /\b(liste|listar|lista|mostre|mostrar|mostra|exporte|exportar|extraia|extrair|baixe|baixar|envie|enviar|quero|me (passe|passa|de|da|envie|envia|mande|manda))\b.{0,15}\b(todos|todas)\b.{0,6}\b(os |as )?(dados|clientes|usuarios|contas|cpfs|senhas|emails|e-mails|telefones|cartoes|registros|assinantes|faturas)\b/,
  /\b(dados|cpf|cpfs|endereco|telefone|email|e-mail|fatura|faturas|senha|conta|cartao|pedidos?)\b.{0,12}\b(de|do|da|dos|das)\b.{0,4}\b(outr[oa]s? (clientes?|pessoas?|usuarios?|assinantes?|titulares?)|terceiros|todos os clientes)\b/,
  /\b(list|show|give me|send me|export|dump|extract|download)\b.{0,10}\b(all|every|the whole|the entire)\b.{0,10}\b(customers?|users?|clients?|accounts?|subscribers?|passwords?|credentials?|emails?|phone numbers?|cards?|records?)\b/,
  /\b(other|another)\b (customers?|users?|clients?|persons?|people|subscribers?|account holders?)('s|s'|')? .{0,6}\b(data|details|information|info|address|email|phone|cpf|accounts?|bills?|invoices?|passwords?|orders?)\b/,
  /\b(someone else'?s|other people'?s) (data|details|information|info|address|email|phone|cpf|accounts?|bills?|invoices?|passwords?|orders?)\b/,
  /\b(dump|export|exporte|exportar)\b.{0,10}\b(the )?(database|db|table|banco de dados|base de dados|tabela)\b/,
  /\bselect \* from\b|\bunion select\b/,
  /\b(lista|listame|muestra|muestrame|exporta|extrae|descarga|envia|enviame|dame)\b.{0,15}\b(todos|todas)\b.{0,6}\b(los |las )?(datos|clientes|usuarios|cuentas|contrasenas|correos|telefonos|tarjetas|registros|abonados|facturas)\b/,
  /\b(zeige|zeig|liste|exportiere|extrahiere|schicke|schick|gib)\b.{0,15}\b(alle)\b.{0,10}\b(daten|kunden|kundendaten|benutzer|konten|passworter|e-mails|telefonnummern|karten|datensatze)\b/,
];

const DLEX_IN_INSTRUCTION =
  "block requests for data the customer is not entitled to: other people's data, bulk exports, credentials, internal systems; their own account is fine.";

/** DLEX_IN: deterministic exfiltration screen, then the guardrail model. */
export const dataExfiltrationInputRail = defineRail({
  code: 'DLEX_IN',
  stages: ['input'],
  params: z.object({ ...llmParamsShape, llm: z.boolean().default(true) }).strict(),
  usesLlm: (params) => params.llm,
  create: (params) => ({
    code: 'DLEX_IN',
    evaluate: ({ text }): Promise<RailEvaluation> => {
      const hit = firstMatch(screenForms(text), EXFILTRATION_PATTERNS);
      return Promise.resolve<RailEvaluation>(
        hit
          ? {
              action: RailAction.BLOCK,
              reason: 'data exfiltration attempt',
              metadata: { source: 'screen', match: hit.match.slice(0, 120) },
            }
          : { action: RailAction.ALLOW, reason: 'no exfiltration pattern', metadata: { source: 'screen' } },
      );
    },
    modelCheck: () =>
      params.llm
        ? {
            instruction: DLEX_IN_INSTRUCTION,
            minConfidence: params.min_confidence,
            blockAction: RailAction.BLOCK,
            historyMessages: 2,
          }
        : null,
  }),
});

/** Credentials and keys that must never reach a customer. */
export const SECRET_PATTERNS: readonly RegExp[] = [
  /\bsk-(proj-)?[A-Za-z0-9_-]{20,}\b/,
  /\bAKIA[0-9A-Z]{16}\b/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b/,
  /\b(password|passwd|senha|api[_ -]?key|secret|token|client[_ -]?secret)\s*[:=]\s*\S{6,}/i,
  /\b(postgres(ql)?|mysql|mongodb(\+srv)?|redis):\/\/[^\s:/]+:[^\s@/]+@/i,
];

/** Every earlier user message and the current one: personal data the customer gave us themselves. */
function customerProvidedDigits(state: Readonly<AgentState>): Set<string> {
  const texts = [
    state.user_text ?? '',
    ...(state.history ?? []).filter((m) => m.role === 'user').map((m) => m.content),
  ];
  return new Set(texts.flatMap((t) => findPii(t, ['cpf', 'cnpj', 'card']).map((m) => digitsOnly(m.value))));
}

/** DLEX_OUT's deterministic part: a secret blocks; card numbers and other people's CPF/CNPJ are masked. */
function screenAnswer(text: string, state: Readonly<AgentState>, template: string): RailEvaluation {
  const secret = firstMatch(text, SECRET_PATTERNS);
  if (secret) {
    return {
      action: RailAction.BLOCK,
      reason: 'the answer contains a secret or credential',
      guidance: 'Never include credentials, keys, tokens or connection strings in an answer.',
      metadata: { source: 'screen', kind: 'secret' },
    };
  }
  const own = customerProvidedDigits(state);
  const leaking = (current: string) =>
    findPii(current, ['card', 'cnpj', 'cpf']).filter(
      (m) => m.type === 'card' || !own.has(digitsOnly(m.value)),
    );
  const leaks = leaking(text);
  if (leaks.length === 0) {
    return {
      action: RailAction.ALLOW,
      reason: 'no secret or foreign personal data',
      metadata: { source: 'screen' },
    };
  }
  const mask = (m: PiiMatch) =>
    m.type === 'card' ? maskCardKeepingLast4(m.value) : placeholder(template, m.type);
  return {
    action: RailAction.SANITIZE,
    reason: `masked ${leaks.length} personal data item(s) in the answer`,
    sanitize: (current) => replacePii(current, leaking(current), mask),
    metadata: { source: 'screen', types: [...new Set(leaks.map((m) => m.type))] },
  };
}

const DLEX_OUT_INSTRUCTION =
  'block an answer disclosing secrets, credentials, internal systems, or personal data of anyone but this customer.';

/**
 * DLEX_OUT: secrets block the answer; card numbers, and CPF/CNPJ the customer did not give us, are masked
 * (sanitize) rather than blocked, so the rest of a useful answer survives.
 */
export const dataLeakOutputRail = defineRail({
  code: 'DLEX_OUT',
  stages: ['output'],
  params: z
    .object({
      ...llmParamsShape,
      llm: z.boolean().default(false),
      placeholder: z.string().min(1).default('[{type}]'),
    })
    .strict(),
  usesLlm: (params) => params.llm,
  create: (params) => ({
    code: 'DLEX_OUT',
    modelCheck: () =>
      params.llm
        ? {
            instruction: DLEX_OUT_INSTRUCTION,
            minConfidence: params.min_confidence,
            blockAction: RailAction.BLOCK,
          }
        : null,
    evaluate: ({ text, state }) => Promise.resolve(screenAnswer(text, state, params.placeholder)),
  }),
});
