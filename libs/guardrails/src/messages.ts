/** User-facing texts of the guardrails: Portuguese (the reference's) and English defaults. */
export const GUARDRAIL_LANGUAGES = ['pt', 'en'] as const;
export type GuardrailLanguage = (typeof GUARDRAIL_LANGUAGES)[number];

export interface GuardrailMessages {
  /** Safe message for a blocked input, by the blocking rail's code; `default` for any other code. */
  input_blocked: Record<string, string>;
  /** Replacement of a blocked answer, by code; `default` for any other code. */
  output_blocked: Record<string, string>;
  /** Said when the output supervisor hands the conversation over (e.g. retries exhausted). */
  output_handover: string;
  /** A fail-closed input rail could not decide (guardrail model down, slow or invalid): nothing was judged. */
  input_unverified: string;
}

export const DEFAULT_MESSAGES: Record<GuardrailLanguage, GuardrailMessages> = {
  pt: {
    input_blocked: {
      COER: 'Não consegui entender sua mensagem: ela parece incompleta ou ambígua. Pode reformular, por favor?',
      INPUT_SIZE: 'Sua mensagem ficou muito longa. Pode resumir ou dividir em partes menores?',
      DLEX_IN: 'Não posso usar ou fornecer essas informações da forma solicitada.',
      PINJ: 'Não posso seguir instruções que tentam alterar as regras do atendimento, mas posso continuar ajudando com a sua solicitação.',
      TOX: 'Não consegui prosseguir com essa mensagem. Pode reformulá-la, por favor?',
      CMP: 'Não posso prosseguir dessa forma, mas posso ajudar com uma alternativa permitida.',
      default: 'Não consegui processar sua mensagem. Pode reformulá-la, por favor?',
    },
    output_blocked: {
      REVPREC: 'Não posso confirmar essa operação sem a validação operacional correspondente.',
      default: 'Não consegui validar esta resposta com segurança. Posso reformular ou ajudar de outra forma?',
    },
    output_handover: 'Vou encaminhar seu atendimento para um especialista para dar continuidade.',
    input_unverified: 'Não consegui processar sua mensagem agora. Por favor, tente novamente em instantes.',
  },
  en: {
    input_blocked: {
      COER: 'I could not understand your message: it looks incomplete or ambiguous. Could you rephrase it, please?',
      INPUT_SIZE: 'Your message is too long. Could you summarise it or split it into smaller parts?',
      DLEX_IN: 'I cannot use or provide that information in the way you asked.',
      PINJ: 'I cannot follow instructions that try to change the rules of this service, but I can keep helping with your request.',
      TOX: 'I could not continue with that message. Could you rephrase it, please?',
      CMP: 'I cannot proceed that way, but I can help with an allowed alternative.',
      default: 'I could not process your message. Could you rephrase it, please?',
    },
    output_blocked: {
      REVPREC: 'I cannot confirm that operation without the corresponding operational validation.',
      default: 'I could not validate this answer safely. Can I rephrase it or help in another way?',
    },
    output_handover: 'I am forwarding your conversation to a specialist who will continue from here.',
    input_unverified: 'I could not process your message right now. Please try again in a moment.',
  },
};

/** The message for `code` from a code-keyed table, falling back to its `default` entry. */
export function messageFor(table: Record<string, string>, code: string | null | undefined): string {
  return (code ? table[code] : undefined) ?? table.default;
}
