import { z } from 'zod';
import { confirmationOutput, parameterValuesOutput } from '@agent/agents';
import { IntentConfig, SERVICE_LANGUAGES, ServiceLanguage } from '@agent/config';
import { continuityOutput } from '@agent/continuity';
import type { ContinuityDecision } from '@agent/contracts';
import { judgeVerdict } from '@agent/judges';
import { memoryFactsOutput } from '@agent/memory';
import { KeywordIndex, matchKeyword, planOutput, routerOutput, tokenize } from '@agent/routing';

/**
 * The built-in demo model: a stand-in for a language model so that `npm start` on a fresh clone shows the
 * product (routing, a tool call, stickiness, a handoff) with no key and no endpoint (docs/adr/0012). It is NOT
 * a model: it reads the stage a request is for from the JSON schema the request names, and answers from the
 * routing catalogue's keywords and a few words of Portuguese, English and Spanish. Every answer it writes says
 * it is the demo model; the service refuses it in production.
 */

const messageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.string().nullish(),
  tool_calls: z.array(z.object({ function: z.object({ name: z.string() }) })).optional(),
});

/** What the demo model reads of a chat-completions request; anything else in it is ignored. */
export const demoRequestSchema = z.object({
  model: z.string(),
  messages: z.array(messageSchema).min(1),
  /** The answer as server-sent chunks (the agents' streamed answers). */
  stream: z.boolean().optional(),
  tools: z
    .array(
      z.object({
        type: z.literal('function'),
        function: z.object({ name: z.string(), description: z.string().optional() }),
      }),
    )
    .optional(),
  response_format: z
    .union([
      z.object({
        type: z.literal('json_schema'),
        json_schema: z.object({ name: z.string(), schema: z.record(z.unknown()).optional() }),
      }),
      z.object({ type: z.enum(['json_object', 'text']) }),
    ])
    .optional(),
});
export type DemoRequest = z.output<typeof demoRequestSchema>;

export type DemoReply = { content: string } | { toolCalls: { name: string; arguments: string }[] };

/** The words the demo model "understands", folded as the router folds keywords. */
const LEXICON = {
  handoff: [
    'atendente',
    'humano',
    'humana',
    'pessoa',
    'operador',
    'operadora',
    'person',
    'human',
    'representative',
    'live agent',
    'persona',
    'asesor',
  ],
  end: [
    'encerrar',
    'encerra',
    'encerre',
    'tchau',
    'so isso',
    'pode fechar',
    'bye',
    'goodbye',
    'close this',
    'that s all',
    'we re done',
    'terminar',
    'adios',
    'eso es todo',
  ],
  yes: ['sim', 'pode', 'claro', 'confirmo', 'yes', 'sure', 'ok', 'okay', 'confirm', 'si', 'dale'],
  no: ['nao', 'no', 'nope', 'desisto', 'esquece', 'forget it', 'never mind', 'olvidalo'],
} as const;

function says(kind: keyof typeof LEXICON, tokens: readonly string[]): boolean {
  return LEXICON[kind].some((word) => matchKeyword(tokenize(word), tokens) !== null);
}

/** Words that tell the three service languages apart in a short message. */
const LANGUAGE_WORDS: Record<ServiceLanguage, readonly string[]> = {
  pt: ['meu', 'minha', 'voce', 'qual', 'quero', 'nao', 'esta', 'obrigado', 'fatura', 'pedido', 'um', 'uma'],
  en: ['my', 'the', 'what', 'is', 'i', 'you', 'want', 'how', 'please', 'bill', 'order', 'does'],
  es: ['mi', 'el', 'usted', 'cual', 'quiero', 'esta', 'gracias', 'factura', 'como', 'por', 'favor'],
};

export function languageOf(text: string, fallback: ServiceLanguage): ServiceLanguage {
  const tokens = new Set(tokenize(text));
  let best: { language: ServiceLanguage; score: number } = { language: fallback, score: 0 };
  for (const language of SERVICE_LANGUAGES) {
    const score = LANGUAGE_WORDS[language].filter((word) => tokens.has(word)).length;
    if (score > best.score) best = { language, score };
  }
  return best.language;
}

const WORDING: Record<
  ServiceLanguage,
  { mark: string; used: string; failed: string; heard: (text: string) => string }
> = {
  pt: {
    mark: '[modelo de demonstração]',
    used: 'consultei',
    failed: 'não consegui consultar',
    heard: (text) =>
      `Recebi "${text}". Sou o modelo de demonstração: não entendo a mensagem, só mostro o caminho da conversa. Configure um modelo de verdade (LLM_PROVIDER, LLM_BASE_URL) para respostas reais.`,
  },
  en: {
    mark: '[demo model]',
    used: 'I looked up',
    failed: 'I could not look up',
    heard: (text) =>
      `I got "${text}". I am the demo model: I do not understand the message, I only show the conversation's path. Configure a real model (LLM_PROVIDER, LLM_BASE_URL) for real answers.`,
  },
  es: {
    mark: '[modelo de demostración]',
    used: 'consulté',
    failed: 'no pude consultar',
    heard: (text) =>
      `Recibí "${text}". Soy el modelo de demostración: no entiendo el mensaje, solo muestro el camino de la conversación. Configure un modelo real (LLM_PROVIDER, LLM_BASE_URL) para respuestas reales.`,
  },
};

/** How an operator-facing reason says it came from the demo model. */
const REASON = '[demo model]';

/** The names of the stages whose output is built per call (their fields vary), for the dispatch below. */
const CONFIRMATION = confirmationOutput([]).name;
const PARAMETER_VALUES = parameterValuesOutput([]).name;

const continuityPayloadSchema = z.object({
  active_agent: z.string(),
  current_message: z.string(),
  previous_intent: z.string().nullish(),
  pending_topics: z.array(z.object({ topic: z.string() })).optional(),
});

const routerPayloadSchema = z.object({
  message: z.string(),
  allowed_intents: z.array(z.object({ name: z.string() })),
  pending_topics: z.array(z.object({ intent: z.string() })).optional(),
});

const toolMessageSchema = z.object({
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: z.string().nullish(),
});

/** Words of this length or longer carry meaning; shorter ones are articles and prepositions. */
const CONTENT_WORD_LENGTH = 4;
/** Facts of a tool result an answer shows. */
const MAX_FACTS = 10;
/** Keys of a tool result that say nothing to a customer: the outcome flag and internal identifiers. */
const BOOKKEEPING = /^ok$|_id$/;

export class DemoModel {
  private readonly keywords: KeywordIndex;
  private readonly intents: readonly IntentConfig[];

  constructor(
    intents: readonly IntentConfig[],
    private readonly language: ServiceLanguage,
  ) {
    this.intents = intents.filter((intent) => intent.enabled);
    this.keywords = new KeywordIndex(this.intents);
  }

  reply(request: DemoRequest): DemoReply {
    const format = request.response_format;
    if (format === undefined || format.type === 'text') return this.agent(request);
    const stage = format.type === 'json_schema' ? format.json_schema : null;
    return { content: JSON.stringify(this.structured(request, stage)) };
  }

  /** The JSON a stage asked for, chosen by its schema's name; `{}` (invalid for every stage) when unknown. */
  private structured(
    request: DemoRequest,
    stage: { name: string; schema?: Record<string, unknown> } | null,
  ): Record<string, unknown> {
    if (stage === null) return {};
    const user = lastOf(request, 'user');
    switch (stage.name) {
      case continuityOutput.name:
        return this.continuity(user);
      case routerOutput.name:
        return this.route(user);
      case planOutput.name:
        return this.plan(user);
      case judgeVerdict.name:
        return { score: 1, passed: true, reason: `${REASON} not judged` };
      case memoryFactsOutput.name:
        return { facts: [] };
      case CONFIRMATION:
        return confirmation(user);
      case PARAMETER_VALUES:
        return parameterValues(user, propertiesOf(propertiesOf(stage.schema).values));
      default:
        // The guardrail model's verdicts: one key per rail asked about, each allowed.
        return stage.name.startsWith('guardrail_verdict_')
          ? Object.fromEntries(
              Object.keys(propertiesOf(stage.schema)).map((code) => [
                code,
                { verdict: 'allow', confidence: 0.99, reason: null },
              ]),
            )
          : {};
    }
  }

  /** Stickiness: a person, the end, a new subject by its keywords, else a follow-up of the active agent. */
  private continuity(text: string): Record<string, unknown> {
    // A bare message (llm:check's probe) reads as the first message of a conversation.
    const payload = parseJson(text, continuityPayloadSchema) ?? { active_agent: '', current_message: text };
    const tokens = tokenize(payload.current_message);
    const decide = (decision: ContinuityDecision, reason: string, target?: string) => ({
      decision,
      confidence: 0.95,
      reason: `${REASON} ${reason}`,
      ...(target === undefined ? {} : { target }),
    });
    if (says('handoff', tokens)) return decide('HUMAN_HANDOFF', 'the customer asks for a person');
    if (says('end', tokens)) return decide('END_SESSION', 'the customer ends the conversation');
    const pending = payload.pending_topics?.[0];
    if (pending && says('yes', tokens)) return decide('ROUTE', 'accepts the pending topic', pending.topic);
    const matched = this.keywords.match(payload.current_message)?.intent;
    const capability = matched ? (matched.label ?? matched.description) : undefined;
    if (!payload.active_agent) return decide('ROUTE', 'a first request', capability);
    if (matched && (matched.agent !== payload.active_agent || matched.name !== payload.previous_intent)) {
      return decide('ROUTE', `a new subject: ${matched.name}`, capability);
    }
    return decide('CONTINUE', `a follow-up for ${payload.active_agent}`);
  }

  /** The router's model: the intent whose keywords, else whose words, the message shares most. */
  private route(text: string): Record<string, unknown> {
    const payload: z.output<typeof routerPayloadSchema> = parseJson(text, routerPayloadSchema) ?? {
      message: text,
      allowed_intents: [...this.intents],
    };
    const pending = payload.pending_topics?.[0];
    if (pending && says('yes', tokenize(payload.message))) {
      return { intent: pending.intent, confidence: 0.9, reason: `${REASON} accepts the pending topic` };
    }
    const allowed = new Set(payload.allowed_intents.map((intent) => intent.name));
    const intent = this.closest(payload.message, (candidate) => allowed.has(candidate.name));
    return intent
      ? { intent: intent.name, confidence: 0.9, reason: `${REASON} shares words with ${intent.name}` }
      : { intent: 'none', confidence: 0, reason: `${REASON} no intent shares a word with the message` };
  }

  /** Supervisor mode: the intent the message names, or none (the planner then falls back). */
  private plan(text: string): Record<string, unknown> {
    const intent = this.closest(parseJson(text, routerPayloadSchema)?.message ?? text, () => true);
    return { intents: intent ? [{ intent: intent.name, confidence: 0.9 }] : [] };
  }

  private closest(message: string, eligible: (intent: IntentConfig) => boolean): IntentConfig | undefined {
    const matched = this.keywords.match(message)?.intent;
    if (matched && eligible(matched)) return matched;
    const words = contentWords(message);
    let best: { intent: IntentConfig; shared: number } | undefined;
    for (const intent of this.intents.filter(eligible)) {
      const own = contentWords([intent.label ?? '', intent.description, ...intent.examples].join(' '));
      const shared = [...words].filter((word) => own.has(word)).length;
      if (shared > (best?.shared ?? 0)) best = { intent, shared };
    }
    return best?.intent;
  }

  /** An agent: one offered tool first (the one whose name and description share most with the message), then the answer. */
  private agent(request: DemoRequest): DemoReply {
    const lastUser = request.messages.map((m) => m.role).lastIndexOf('user');
    const text = request.messages[lastUser]?.content ?? '';
    const wording = WORDING[languageOf(text, this.language)];
    const results = request.messages.slice(lastUser + 1).filter((m) => m.role === 'tool');
    const tools = request.tools ?? [];
    if (results.length === 0 && tools.length > 0) {
      const words = contentWords(text);
      const scored = tools.map(({ function: tool }) => ({
        name: tool.name,
        shared: [...contentWords(`${tool.name.replace(/_/g, ' ')} ${tool.description ?? ''}`)].filter(
          (word) => words.has(word),
        ).length,
      }));
      const chosen = scored.reduce((best, tool) => (tool.shared > best.shared ? tool : best));
      // No arguments: the runtime fills them from the channel's metadata and the message (tools.yaml).
      return { toolCalls: [{ name: chosen.name, arguments: '{}' }] };
    }
    if (results.length === 0) return { content: `${wording.mark} ${wording.heard(text)}` };
    const calls = request.messages
      .slice(lastUser + 1)
      .flatMap((m) => (m.tool_calls ?? []).map((call) => call.function.name));
    const lines = results.map((result, index) => {
      const outcome = parseJson(result.content ?? '', toolMessageSchema);
      const tool = calls[index] ?? 'tool';
      if (!outcome?.ok) return `${wording.failed} ${tool} (${outcome?.error ?? 'error'}).`;
      return `${wording.used} ${tool}: ${facts(outcome.result).join(' · ')}.`;
    });
    return { content: `${wording.mark} ${lines.join(' ')}` };
  }
}

function lastOf(request: DemoRequest, role: 'user'): string {
  return request.messages.filter((m) => m.role === role).pop()?.content ?? '';
}

function parseJson<T>(text: string, schema: z.ZodType<T, z.ZodTypeDef, unknown>): T | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? parsed.data : null;
}

function propertiesOf(schema: unknown): Record<string, unknown> {
  const parsed = z.object({ properties: z.record(z.unknown()) }).safeParse(schema);
  return parsed.success ? parsed.data.properties : {};
}

function contentWords(text: string): Set<string> {
  return new Set(tokenize(text).filter((word) => word.length >= CONTENT_WORD_LENGTH));
}

function confirmation(text: string): Record<string, unknown> {
  const tokens = tokenize(text);
  const yes = says('yes', tokens);
  const no = says('no', tokens);
  if (yes !== no) {
    return { decision: yes ? 'CONFIRM' : 'REJECT', confidence: 0.95, reason: `${REASON} a plain yes or no` };
  }
  return { decision: 'OTHER', confidence: 0.6, reason: `${REASON} neither a yes nor a no` };
}

/** Every field asked for gets the message's long number, if it has one (order ids, phone numbers). */
function parameterValues(text: string, fields: Record<string, unknown>): Record<string, unknown> {
  if (says('no', tokenize(text))) return { action: 'ABANDON', confidence: 0.95, values: {} };
  const number = /\d{6,}/.exec(text.replace(/[\s().-]/g, ''))?.[0] ?? null;
  const values = Object.fromEntries(Object.keys(fields).map((field) => [field, number]));
  return { action: number ? 'ANSWER' : 'OTHER', confidence: 0.9, values };
}

/** A tool result's scalar facts as "key: value", nested objects flattened, lists joined. */
function facts(value: unknown, key = ''): string[] {
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) => (isRecord(item) ? (item.name ?? item.description) : item));
    const shown = items.flatMap(scalar);
    return shown.length > 0 ? [`${key}: ${shown.join(', ')}`] : [];
  }
  if (isRecord(value)) {
    return Object.entries(value)
      .filter(([name]) => !BOOKKEEPING.test(name))
      .flatMap(([name, inner]) => facts(inner, name))
      .slice(0, MAX_FACTS);
  }
  return scalar(value).map((text) => (key ? `${key}: ${text}` : text));
}

function scalar(value: unknown): string[] {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? [String(value)]
    : [];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
