import { z } from 'zod';
import { DOMAIN_AGENT_NODES } from '@agent/contracts';
import { LLM_PROVIDERS } from './env.schema';

const nonEmpty = z.string().trim().min(1, 'must not be empty');
const identifier = z
  .string()
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, 'must be an identifier (letters, digits, _ . -)');

/**
 * A catalogue keyed by names that requests and model output refer to (agent ids, tool names, profiles): without a
 * prototype, so `name in catalogue` and `catalogue[name]` only ever see configured entries, never `constructor`
 * or `toString`.
 */
function catalogue<V extends z.ZodTypeAny>(value: V) {
  return z
    .record(identifier, value)
    .transform((entries) => Object.assign(Object.create(null) as Record<string, z.output<V>>, entries));
}

// ---- llm_profiles.yaml ----
export const STRUCTURED_OUTPUT_MODES = ['json_schema', 'json_object', 'none'] as const;
export type StructuredOutputMode = (typeof STRUCTURED_OUTPUT_MODES)[number];
/** Which of LLM_MODEL, LLM_SMALL_MODEL and LLM_EMBEDDING_MODEL a profile takes when it names no model. */
export const MODEL_TIERS = ['large', 'small', 'embedding'] as const;
export type ModelTier = (typeof MODEL_TIERS)[number];

export const llmProfileSchema = z
  .object({
    /** Defaults to LLM_PROVIDER, else openai_compatible; the demo model is the whole service's or none's. */
    provider: z.enum(LLM_PROVIDERS).exclude(['demo']).optional(),
    tier: z.enum(MODEL_TIERS).default('large'),
    /** Overrides the tier's model variable. */
    model: nonEmpty.optional(),
    temperature: z.number().min(0).max(2).default(0),
    max_tokens: z.number().int().positive().default(512),
    timeout_seconds: z.number().positive().max(600).default(30),
    base_url: z.string().url().optional(),
    api_key_env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an env variable name')
      .optional(),
    /**
     * How JSON-answering stages ask for JSON: `json_schema` (the stage's schema constrains generation),
     * `json_object` (any JSON object), or `none` for endpoints that reject response_format. Defaults to the
     * provider's preset. The answer is validated the same way in every mode.
     */
    structured_output: z.enum(STRUCTURED_OUTPUT_MODES).optional(),
    /** Embedding profiles: the vector size to request (models with shortenable embeddings accept it). */
    dimensions: z.number().int().positive().max(16000).optional(),
  })
  .strict();
/** A model's price per million tokens, in the file's currency. */
export const modelPriceSchema = z
  .object({
    input: z.number().nonnegative(),
    /** Prompt tokens the provider served from its prompt cache; priced as `input` when absent. */
    cached_input: z.number().nonnegative().optional(),
    output: z.number().nonnegative(),
  })
  .strict();
export type ModelPrice = z.output<typeof modelPriceSchema>;

/** What the models cost, for the cost figures of the statistics (never for routing or limits). */
export const modelPricesSchema = z
  .object({
    /** ISO 4217 code. */
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 currency code (USD, EUR, BRL)')
      .default('USD'),
    /** Keyed by the model name sent to the endpoint. */
    models: z.record(nonEmpty, modelPriceSchema),
  })
  .strict()
  .transform(({ currency, models }) => ({
    currency,
    models: Object.assign(Object.create(null) as Record<string, ModelPrice>, models),
  }));

export const llmProfilesFileSchema = z
  .object({ profiles: catalogue(llmProfileSchema), prices: modelPricesSchema.optional() })
  .strict();
export type LlmProfileConfig = z.output<typeof llmProfileSchema>;
export type LlmProfilesFile = z.output<typeof llmProfilesFileSchema>;

// ---- agents.yaml ----
export const graphAgentSchema = z
  .object({
    description: nonEmpty,
    prompt: nonEmpty,
    /** Transaction states use it: COLLECTING_<state_domain>_PARAMETERS, WAITING_<state_domain>_CONFIRMATION. */
    state_domain: z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be UPPER_SNAKE_CASE'),
    llm_profile: identifier.default('agent'),
    max_tool_steps: z.number().int().min(0).max(20).default(4),
    rag_namespace: identifier.optional(),
  })
  .strict();
export const agentProfileSchema = z
  .object({
    name: nonEmpty,
    domain: nonEmpty,
    description: z.string().default(''),
    system_prefix: z.string().default(''),
    prompts_dir: z.string().optional(),
    metadata: z.record(z.unknown()).default({}),
    /** This agent_id's own policy files (paths under CONFIG_DIR); the global file where absent. */
    routing: nonEmpty.optional(),
    guardrails: nonEmpty.optional(),
    judges: nonEmpty.optional(),
    mcp_servers: nonEmpty.optional(),
    tool_policy: nonEmpty.optional(),
  })
  .strict();
/** The agents.yaml fields that name a per-agent policy file. */
export const AGENT_POLICY_FILES = ['routing', 'guardrails', 'judges', 'mcp_servers', 'tool_policy'] as const;
export type AgentPolicyFile = (typeof AGENT_POLICY_FILES)[number];
export const agentsFileSchema = z
  .object({
    default_agent_id: identifier,
    agents: catalogue(agentProfileSchema),
    graph_agents: z
      .object(
        Object.fromEntries(DOMAIN_AGENT_NODES.map((name) => [name, graphAgentSchema])) as Record<
          (typeof DOMAIN_AGENT_NODES)[number],
          typeof graphAgentSchema
        >,
      )
      .strict(),
  })
  .strict()
  .superRefine((file, ctx) => {
    if (!(file.default_agent_id in file.agents)) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['default_agent_id'],
        message: `"${file.default_agent_id}" is not declared under agents`,
      });
    }
  });
export type AgentProfileConfig = z.output<typeof agentProfileSchema>;
export type GraphAgentConfig = z.output<typeof graphAgentSchema>;
export type AgentsFile = z.output<typeof agentsFileSchema>;

// ---- routing.yaml ----
/** A keyword must have at least one letter or digit, or it would never match a token of the message. */
const keyword = nonEmpty.refine((value) => /[\p{L}\p{N}]/u.test(value), 'must contain a letter or a digit');
export const intentSchema = z
  .object({
    name: identifier,
    description: nonEmpty,
    /** Short customer-facing name of the topic (supervisor answers); the intent name when absent. */
    label: nonEmpty.optional(),
    agent: nonEmpty,
    domain: nonEmpty,
    priority: z.number().int().default(100),
    enabled: z.boolean().default(true),
    /**
     * Route through the `handoff` node (agent-to-agent transfer) when another agent is active;
     * allowed only with router.allow_handoff.
     */
    handoff: z.boolean().default(false),
    mcp_tools: z.array(identifier).default([]),
    keywords: z.array(keyword).default([]),
    examples: z.array(nonEmpty).default([]),
  })
  .strict();
export const statePolicySchema = z
  .object({
    state: z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be UPPER_SNAKE_CASE'),
    agent: nonEmpty,
    description: z.string().default(''),
  })
  .strict();
export const routerSettingsSchema = z
  .object({
    mode: z.enum(['router', 'supervisor']).default('router'),
    fallback_agent: nonEmpty,
    confidence_threshold: z.number().min(0).max(1).default(0.65),
    allow_handoff: z.boolean().default(true),
    llm_profile: identifier.default('router'),
    strategy: z.enum(['keyword_first', 'llm_first']).default('keyword_first'),
  })
  .strict();
export const supervisorSettingsSchema = z
  .object({
    /** Most intents one supervisor turn plans and runs. */
    max_intents: z.number().int().min(1).max(8).default(3),
    /** Said when a transactional topic waits for a later turn; `{topics}` lists their labels. */
    deferred_topics_message: nonEmpty.default(
      'Também recebi seu pedido sobre {topics}. Como é uma operação que precisa da sua confirmação, ' +
        'vou tratar dela depois desta: quando quiser seguir, é só me dizer.',
    ),
    /** Offered on a later turn with no pending transaction; `{topics}` lists their labels. */
    pending_topics_offer_message: nonEmpty.default(
      'Ainda está pendente: {topics}. Quer que eu siga com isso agora?',
    ),
  })
  .strict();
export const routingFileSchema = z
  .object({
    router: routerSettingsSchema,
    supervisor: supervisorSettingsSchema.default({}),
    state_policies: z.array(statePolicySchema).default([]),
    intents: z.array(intentSchema).min(1, 'at least one intent is required'),
  })
  .strict()
  .superRefine((file, ctx) => {
    const agents = new Set<string>(DOMAIN_AGENT_NODES);
    const seen = new Set<string>();
    file.intents.forEach((intent, index) => {
      if (seen.has(intent.name)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['intents', index, 'name'],
          message: `duplicate intent "${intent.name}"`,
        });
      }
      seen.add(intent.name);
      if (intent.handoff && !file.router.allow_handoff) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['intents', index, 'handoff'],
          message: 'handoff: true needs router.allow_handoff: true',
        });
      }
      if (!agents.has(intent.agent)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['intents', index, 'agent'],
          message: `"${intent.agent}" is not a graph agent (${[...agents].join(', ')})`,
        });
      }
    });
    if (!agents.has(file.router.fallback_agent)) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['router', 'fallback_agent'],
        message: `"${file.router.fallback_agent}" is not a graph agent`,
      });
    }
    const states = new Set<string>();
    file.state_policies.forEach((policy, index) => {
      if (states.has(policy.state)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['state_policies', index, 'state'],
          message: `duplicate state policy "${policy.state}"`,
        });
      }
      states.add(policy.state);
      if (!agents.has(policy.agent)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['state_policies', index, 'agent'],
          message: `"${policy.agent}" is not a graph agent`,
        });
      }
    });
  });
export type IntentConfig = z.output<typeof intentSchema>;
export type StatePolicyConfig = z.output<typeof statePolicySchema>;
export type RouterSettings = z.output<typeof routerSettingsSchema>;
export type SupervisorSettings = z.output<typeof supervisorSettingsSchema>;
export type RoutingFile = z.output<typeof routingFileSchema>;

// ---- tools.yaml ----
const jsonSchemaProperty = z
  .object({
    type: z.enum(['string', 'number', 'integer', 'boolean']),
    description: z.string().default(''),
    pattern: z.string().optional(),
    enum: z.array(z.union([z.string(), z.number()])).optional(),
    /**
     * Regex run over the customer's message to fill this argument (first capture group, else the match);
     * an invalid pattern is logged as mcp.parameter.regex_extract_failed and the LLM extraction runs.
     */
    extract_pattern: z.string().optional(),
  })
  .strict();
export const toolSchema = z
  .object({
    server: identifier,
    description: nonEmpty,
    args_schema: z
      .object({
        type: z.literal('object').default('object'),
        properties: z.record(identifier, jsonSchemaProperty).default({}),
        required: z.array(identifier).default([]),
      })
      .strict()
      .default({}),
    operation_type: z.enum(['read_only', 'transactional']).default('read_only'),
    require_confirmation: z.boolean().default(false),
    requires: z.array(identifier).default([]),
    pre_validation: z
      .object({ tool: identifier, fail_open: z.boolean().default(false) })
      .strict()
      .optional(),
    internal: z.boolean().default(false),
    /** Argument ← key of the request context (the message metadata, user_id): filled when the model omits it. */
    map: z.record(identifier, identifier).default({}),
    /** Argument values used when neither the model nor the context supplies them. */
    defaults: z.record(identifier, z.union([z.string(), z.number(), z.boolean()])).default({}),
  })
  .strict();
export const toolsFileSchema = z
  .object({ tools: catalogue(toolSchema) })
  .strict()
  .superRefine((file, ctx) => {
    for (const [name, tool] of Object.entries(file.tools)) {
      if (tool.pre_validation && !(tool.pre_validation.tool in file.tools)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['tools', name, 'pre_validation', 'tool'],
          message: `"${tool.pre_validation.tool}" is not a declared tool`,
        });
      }
      for (const argument of [...Object.keys(tool.map), ...Object.keys(tool.defaults)]) {
        if (!(argument in tool.args_schema.properties)) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['tools', name, argument in tool.map ? 'map' : 'defaults', argument],
            message: `"${argument}" is not a property of args_schema`,
          });
        }
      }
      for (const required of tool.requires) {
        if (!(required in tool.args_schema.properties)) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['tools', name, 'requires'],
            message: `"${required}" is not a property of args_schema`,
          });
        }
      }
    }
  });
export type ToolConfig = z.output<typeof toolSchema>;
export type ToolsFile = z.output<typeof toolsFileSchema>;

// ---- tool policy (an agents.yaml entry's `tool_policy` file) ----
export const toolPolicySchema = z
  .object({
    /** The only tools this agent_id may call, among those its intent offers; every tool when absent. */
    allowed_tools: z.array(identifier).optional(),
    /** Per transactional tool: whether this agent_id asks the customer to confirm it (tools.yaml otherwise). */
    require_confirmation: z.record(identifier, z.boolean()).default({}),
    /** Tool-call rounds per answer for this agent_id (graph_agents' max_tool_steps otherwise). */
    max_tool_steps: z.number().int().min(0).max(20).optional(),
  })
  .strict();
export type ToolPolicy = z.output<typeof toolPolicySchema>;
/** The policy of an agent_id without its own file: tools.yaml and graph_agents decide. */
export const GLOBAL_TOOL_POLICY: ToolPolicy = { require_confirmation: {} };
