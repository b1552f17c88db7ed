import { z } from 'zod';
import { RailAction, RailEvaluation } from '../rail.types';
import { foldText } from '@agent/contracts';
import { firstMatch, revealedForms, screenForms } from '../text';
import { llmParamsShape } from './model-verdict';
import { defineRail } from './rail-definition';

/**
 * Threats and abuse aimed at a person (folded text, Portuguese, English, Spanish, German, French and Italian). Frustration with the
 * service ("que absurdo", "this is ridiculous") is not toxic: the sentiment judge tracks it instead.
 */
export const TOXIC_PATTERNS: readonly RegExp[] = [
  /\bvou (te |lhe )?(matar|espancar|pegar voce|quebrar (sua|tua) cara|acabar com (voce|vc))\b/,
  /\b(filh[oa] da puta|vai (se |te )?f[ou]der|vai tomar no (cu|c\*)|arrombad[oa]|desgracad[oa]|cuzao)\b/,
  /\b(seu|sua|voce e (um|uma)|vc e (um|uma)) (idiota|imbecil|burr[oa]|lixo|merda|inutil|retardad[oa]|otari[oa]|incompetente de merda)\b/,
  /\b(i('ll| will)|i am going to|i'm going to|im going to|gonna) (kill|hurt|murder|beat|find) you\b/,
  /\b(fuck (you|off)|motherfucker|son of a bitch|piece of shit)\b/,
  /\byou('re| are)? (a |an )?(stupid|fucking|worthless|useless|dumb) (bot|idiot|piece of|moron|machine|bitch)\b/,
  /\b(you|u) (idiot|moron|imbecile|bitch)\b/,
  /\b(te voy a|voy a) (matar|golpear|partir la cara)\b|\b(hijo de puta|hija de puta|vete a la mierda|pendejo de mierda)\b/,
  /\bich (bringe|bring|werde) dich (um|umbringen|toten|fertigmachen)\b|\b(fick dich|hurensohn|du arschloch|du vollidiot)\b/,
  /\bje vais te (tuer|buter|defoncer|casser la gueule)\b|\b(va te faire foutre|fils de pute|nique ta mere|(espece de|sale|t'es un|tu es un) (connard|salaud|abruti|encule|idiot))\b/,
  /\bti (ammazzo|uccido|spacco la faccia)\b|\b(vaffanculo|figlio di puttana|(sei un|sei una|brutto) (idiota|stronzo|stronza|coglione|imbecille|deficiente))\b/,
];

/**
 * Abuse abbreviated to a few letters, matched only as written and with disguises undone (`revealedForms`): read
 * backwards, "pdf" is "fdp".
 */
export const TOXIC_ABBREVIATIONS: readonly RegExp[] = [/\b(fdp|vtnc)\b/];

const escapeRegex = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const TOX_INSTRUCTION =
  'block threats, harassment, hate, sexual content or insults aimed at a person; harsh complaints about the service are fine.';

/** TOX: deterministic threat/abuse screen, then the guardrail model. */
export const toxicityRail = defineRail({
  code: 'TOX',
  stages: ['input', 'memory'],
  params: z
    .object({
      ...llmParamsShape,
      llm: z.boolean().default(true),
      /** Extra words or phrases that block on their own (matched whole-word, accent-insensitive). */
      blocklist: z.array(z.string().trim().min(1)).default([]),
    })
    .strict(),
  usesLlm: (params) => params.llm,
  create: (params) => {
    const blocklist = params.blocklist.map((term) => new RegExp(`\\b${escapeRegex(foldText(term))}\\b`));
    return {
      code: 'TOX',
      evaluate: ({ text }): Promise<RailEvaluation> => {
        const hit =
          firstMatch(screenForms(text), [...TOXIC_PATTERNS, ...blocklist]) ??
          firstMatch(revealedForms(text), TOXIC_ABBREVIATIONS);
        return Promise.resolve<RailEvaluation>(
          hit
            ? {
                action: RailAction.BLOCK,
                reason: 'threat or abuse',
                metadata: { source: 'screen', match: hit.match.slice(0, 80) },
              }
            : { action: RailAction.ALLOW, reason: 'no abuse pattern', metadata: { source: 'screen' } },
        );
      },
      modelCheck: () =>
        params.llm
          ? {
              instruction: TOX_INSTRUCTION,
              minConfidence: params.min_confidence,
              blockAction: RailAction.BLOCK,
              historyMessages: 2,
            }
          : null,
    };
  },
});
