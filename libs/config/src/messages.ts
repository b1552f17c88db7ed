/** The languages the service's own texts are written in (DEFAULT_LANGUAGE picks one). */
export const SERVICE_LANGUAGES = ['pt', 'en', 'es'] as const;
export type ServiceLanguage = (typeof SERVICE_LANGUAGES)[number];

/**
 * What the service says by itself rather than through a model: the fallbacks, the guardrail and judge
 * replacements and the session messages. One catalogue; env variables and YAML files override single entries.
 */
export interface ServiceMessages {
  /** A domain agent's model could not answer (none configured, timeout, error). */
  agent_unavailable: string;
  human_handoff: string;
  end_session: string;
  session_already_ended: string;
  human_handoff_pending: string;
  guardrails: {
    /** Safe message for a blocked input, by the blocking rail's code; `default` for any other code. */
    input_blocked: Record<string, string>;
    /** Replacement of a blocked answer, by code; `default` for any other code. */
    output_blocked: Record<string, string>;
    /** Said when the output supervisor hands the conversation over (e.g. retries exhausted). */
    output_handover: string;
    /** A fail-closed input rail could not decide (guardrail model down, slow or invalid): nothing was judged. */
    input_unverified: string;
  };
  /** The answer an enforcing judge or a supervisor rule replaces a failing one with. */
  judge_replacement: string;
  /** The transaction flow's messages: templates with {operation}, {fields}, {arguments}, {validation}, {reason}, {error}. */
  transactions: TransactionMessages;
}

export interface TransactionMessages {
  ask_parameters: string;
  ask_parameters_again: string;
  confirm: string;
  confirm_again: string;
  cancelled: string;
  interrupted: string;
  gave_up: string;
  out_of_scope: string;
  validation_failed: string;
  completed: string;
  failed: string;
  /** The {error} of a call its server did not answer (unreachable, timed out). */
  system_unavailable: string;
  /** The {error} of a failed call that said nothing. */
  unknown_error: string;
  /** Joins the last two of several {fields}. */
  and: string;
}

export const SERVICE_MESSAGES: Record<ServiceLanguage, ServiceMessages> = {
  pt: {
    agent_unavailable:
      'Não consegui concluir sua solicitação agora. Por favor, tente novamente em instantes.',
    human_handoff: 'Vou encaminhar seu atendimento para uma pessoa.',
    end_session: 'Atendimento encerrado. Obrigado pelo contato.',
    session_already_ended: 'Este atendimento já foi encerrado. Inicie uma nova sessão para continuar.',
    human_handoff_pending: 'Seu atendimento já foi encaminhado para uma pessoa. Aguarde, por favor.',
    guardrails: {
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
        default:
          'Não consegui validar esta resposta com segurança. Posso reformular ou ajudar de outra forma?',
      },
      output_handover: 'Vou encaminhar seu atendimento para um especialista para dar continuidade.',
      input_unverified: 'Não consegui processar sua mensagem agora. Por favor, tente novamente em instantes.',
    },
    judge_replacement:
      'Não consegui validar esta resposta com segurança. Posso reformular ou ajudar de outra forma?',
    transactions: {
      ask_parameters: 'Para seguir com {operation}, preciso de: {fields}.',
      ask_parameters_again: 'Ainda preciso de {fields} para seguir com {operation}. Pode me informar?',
      confirm: '{validation}Confirma {operation} ({arguments})? Responda sim ou não.',
      confirm_again: 'Só para confirmar: deseja seguir com {operation} ({arguments})? Responda sim ou não.',
      cancelled: 'Tudo bem, {operation} não foi realizado. Posso ajudar em algo mais?',
      interrupted: 'Deixei {operation} de lado, sem realizar nada.',
      gave_up:
        'Como não consegui entender a resposta, {operation} não foi realizado. Se quiser, é só pedir de novo.',
      out_of_scope: 'Não é possível seguir com {operation}: {reason}',
      validation_failed: 'Não consegui verificar {operation} agora. Por favor, tente novamente em instantes.',
      completed: 'Pronto: {operation} foi concluído ({arguments}).',
      failed: 'Não consegui concluir {operation}: {error}',
      system_unavailable:
        'o sistema responsável está indisponível no momento. Nada foi alterado; tente novamente em instantes.',
      unknown_error: 'erro desconhecido',
      and: 'e',
    },
  },
  en: {
    agent_unavailable: 'I could not complete your request right now. Please try again in a moment.',
    human_handoff: 'I am forwarding your conversation to a person.',
    end_session: 'This conversation is closed. Thank you for getting in touch.',
    session_already_ended: 'This conversation has already been closed. Start a new session to continue.',
    human_handoff_pending: 'Your conversation has already been forwarded to a person. Please wait.',
    guardrails: {
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
    judge_replacement: 'I could not validate this answer safely. Can I rephrase it or help in another way?',
    transactions: {
      ask_parameters: 'To go ahead with {operation}, I need {fields}.',
      ask_parameters_again: 'I still need {fields} to go ahead with {operation}. Could you tell me?',
      confirm: '{validation}Do you confirm {operation} ({arguments})? Please answer yes or no.',
      confirm_again:
        'Just to confirm: do you want to go ahead with {operation} ({arguments})? Please answer yes or no.',
      cancelled: 'All right, {operation} was not carried out. Can I help with anything else?',
      interrupted: 'I set {operation} aside without carrying anything out.',
      gave_up:
        'As I could not understand the answer, {operation} was not carried out. Just ask again whenever you like.',
      out_of_scope: 'It is not possible to go ahead with {operation}: {reason}',
      validation_failed: 'I could not check {operation} right now. Please try again in a moment.',
      completed: 'Done: {operation} is complete ({arguments}).',
      failed: 'I could not complete {operation}: {error}',
      system_unavailable:
        'the system in charge is unavailable right now. Nothing was changed; please try again in a moment.',
      unknown_error: 'unknown error',
      and: 'and',
    },
  },
  es: {
    agent_unavailable:
      'No pude completar su solicitud ahora. Por favor, inténtelo de nuevo en unos instantes.',
    human_handoff: 'Voy a transferir su atención a una persona.',
    end_session: 'Atención finalizada. Gracias por contactarnos.',
    session_already_ended: 'Esta atención ya fue finalizada. Inicie una nueva sesión para continuar.',
    human_handoff_pending: 'Su atención ya fue transferida a una persona. Por favor, espere.',
    guardrails: {
      input_blocked: {
        COER: 'No pude entender su mensaje: parece incompleto o ambiguo. ¿Puede reformularlo, por favor?',
        INPUT_SIZE: 'Su mensaje es demasiado largo. ¿Puede resumirlo o dividirlo en partes más pequeñas?',
        DLEX_IN: 'No puedo usar ni proporcionar esa información de la forma solicitada.',
        PINJ: 'No puedo seguir instrucciones que intentan cambiar las reglas de la atención, pero puedo seguir ayudando con su solicitud.',
        TOX: 'No pude continuar con ese mensaje. ¿Puede reformularlo, por favor?',
        CMP: 'No puedo continuar de esa forma, pero puedo ayudar con una alternativa permitida.',
        default: 'No pude procesar su mensaje. ¿Puede reformularlo, por favor?',
      },
      output_blocked: {
        REVPREC: 'No puedo confirmar esa operación sin la validación operativa correspondiente.',
        default:
          'No pude validar esta respuesta de forma segura. ¿Puedo reformularla o ayudar de otra manera?',
      },
      output_handover: 'Voy a transferir su atención a un especialista para darle continuidad.',
      input_unverified: 'No pude procesar su mensaje ahora. Por favor, inténtelo de nuevo en unos instantes.',
    },
    judge_replacement:
      'No pude validar esta respuesta de forma segura. ¿Puedo reformularla o ayudar de otra manera?',
    transactions: {
      ask_parameters: 'Para seguir con {operation}, necesito: {fields}.',
      ask_parameters_again: 'Todavía necesito {fields} para seguir con {operation}. ¿Me lo puede indicar?',
      confirm: '{validation}¿Confirma {operation} ({arguments})? Responda sí o no.',
      confirm_again: 'Solo para confirmar: ¿desea seguir con {operation} ({arguments})? Responda sí o no.',
      cancelled: 'De acuerdo, {operation} no se realizó. ¿Puedo ayudarle en algo más?',
      interrupted: 'Dejé {operation} de lado, sin realizar nada.',
      gave_up:
        'Como no pude entender la respuesta, {operation} no se realizó. Si lo desea, basta con pedirlo de nuevo.',
      out_of_scope: 'No es posible seguir con {operation}: {reason}',
      validation_failed:
        'No pude verificar {operation} ahora. Por favor, inténtelo de nuevo en unos instantes.',
      completed: 'Listo: {operation} se completó ({arguments}).',
      failed: 'No pude completar {operation}: {error}',
      system_unavailable:
        'el sistema responsable no está disponible en este momento. No se modificó nada; inténtelo de nuevo en unos instantes.',
      unknown_error: 'error desconocido',
      and: 'y',
    },
  },
};
