import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { IntentConfig, StatePolicyConfig, SupervisorSettings } from '@agent/config';
import {
  DomainAgentNode,
  MultiIntentPlan,
  noPendingTransaction,
  PendingTopic,
  routeTools,
  SupervisorPlan,
  SupervisorResult,
  transactionSliceOf,
  TurnPatch,
  TurnState,
  turnText,
} from '@agent/contracts';
import { confidenceSchema, LlmService, structuredOutput } from '@agent/llm';
import type { EventBusService } from '@agent/observability';
import { IntentCatalogue, STATE_INTENT_PREFIX } from './intent-catalogue';
import { fillTopics, readPendingTopics } from './pending-topics';

/** Runs one domain agent on the given (isolated) state; supplied by the workflow. */
export type AgentRunner = (node: DomainAgentNode, state: TurnState) => Promise<TurnPatch>;

/** The supervisor plan output: {intents: [{intent, confidence}]}. */
export const planOutput = structuredOutput(
  'supervisor_plan',
  z.object({
    intents: z.array(z.object({ intent: z.string().trim().min(1), confidence: confidenceSchema })),
  }),
);

export interface SupervisorOptions {
  profile: string;
  threshold: number;
  fallbackAgent: DomainAgentNode;
  settings: SupervisorSettings;
  llmEnabled: boolean;
}

type PlanSource = 'llm' | 'keyword' | 'fallback';

interface PlanEntry {
  /** Null for the fallback agent, which has no catalogue intent. */
  intent: IntentConfig | null;
  confidence: number;
}

interface Plan {
  source: PlanSource;
  entries: PlanEntry[];
  rejected: SupervisorPlan['rejected'];
  llmRejection: { reason: string; detail: string } | null;
}

type Disposition = 'execute' | 'defer';

interface Topic {
  operation_id: string;
  intent: string;
  agent: DomainAgentNode;
  domain: string | null;
  tools: string[];
  label: string;
  confidence: number;
  source_text: string;
  transactional: boolean;
  disposition: Disposition;
  /** Why a topic waits for a later turn. */
  defer_reason?: 'transactional_beyond_first' | 'transaction_pending';
  /** A pending topic of an earlier turn that this turn takes up. */
  resumed: boolean;
}

interface TopicResult {
  topic: Topic;
  patch: TurnPatch | null;
  error: unknown;
  latency_ms: number;
}

const PLANNER_PROMPT = (max: number) =>
  [
    'You are the planner of a supervisor that answers a customer message by running one specialist agent per topic.',
    `List every intent of allowed_intents the message asks about, in the order the user mentions them, at most ${max}.`,
    'Answer only with a JSON object: {"intents": [{"intent": "<a name from allowed_intents>", "confidence": <0..1>}]};',
    'an empty list when nothing fits.',
    'When pending_topics is present, those topics were offered to the user earlier: include a pending topic intent',
    'when the user accepts it or asks for it.',
    'When transaction_context is present, a transaction is waiting for the user: if the message only answers what it',
    'waits for (a value, a name, an identifier, a yes or no), return only the transaction intent. Never answer the user.',
  ].join('\n');

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The `supervisor_agent` node: plans the intents of a message, runs each agent on an isolated copy of the state,
 * composes one answer, and keeps transactional topics beyond the first for a later turn.
 */
export class TurnSupervisor {
  /** The planner's instruction depends on the settings only: built once. */
  private readonly plannerPrompt: string;

  constructor(
    private readonly llm: LlmService,
    private readonly catalogue: IntentCatalogue,
    private readonly events: EventBusService,
    private readonly options: SupervisorOptions,
  ) {
    this.plannerPrompt = PLANNER_PROMPT(options.settings.max_intents);
  }

  async run(state: TurnState, runAgent: AgentRunner): Promise<TurnPatch> {
    const message = turnText(state);
    const planId = `sup-${randomUUID().slice(0, 12)}`;
    const pending = readPendingTopics(state, this.catalogue);
    const policy = this.catalogue.policy(state.next_state);
    const transactionIntent = policy ? this.transactionIntentOf(state, policy) : undefined;
    const plan = await this.plan(message, state, pending, policy, transactionIntent);

    if (policy && this.holds(plan, policy, transactionIntent)) {
      return this.continueTransaction(state, runAgent, planId, plan, pending, policy, transactionIntent);
    }

    const topics = this.topicsOf(plan, message, pending);
    const executed = topics.filter((topic) => topic.disposition === 'execute');
    const deferred = topics.filter((topic) => topic.disposition === 'defer');
    const results: TopicResult[] = [];
    for (const topic of executed) results.push(await this.execute(state, runAgent, topic));
    const completed = results.filter((result) => result.patch !== null);
    if (completed.length === 0) throw results[0].error;

    const transactional = completed.find((result) => result.topic.transactional) ?? null;
    const primary = transactional ?? completed[0];
    const transactionPatch = this.transactionPatch(transactional);
    const stillPending = pending.filter(
      (topic) => !topics.some((t) => t.resumed && t.intent === topic.intent),
    );
    const newPending = deferred.map((topic) => this.toPending(topic, planId, state.turn));
    // Offer earlier deferred topics only once no transaction waits for the user, so a confirmation is not muddled.
    const offerNow = this.catalogue.policy(transactionPatch.next_state ?? null)
      ? []
      : stillPending.filter((topic) => topic.status === 'deferred');

    // A transactional answer may end with a confirmation question, so it goes last among the agents' answers.
    const ordered = [
      ...completed.filter((r) => r !== transactional),
      ...(transactional ? [transactional] : []),
    ];
    const parts = ordered.map((result) => result.patch?.answer ?? '').filter((text) => text.trim() !== '');
    if (newPending.length > 0) {
      parts.push(
        fillTopics(
          this.options.settings.deferred_topics_message,
          newPending.map((t) => t.label),
        ),
      );
    }
    if (offerNow.length > 0) {
      parts.push(
        fillTopics(
          this.options.settings.pending_topics_offer_message,
          offerNow.map((t) => t.label),
        ),
      );
    }

    const pendingTopics: PendingTopic[] = [
      ...stillPending.map((topic) =>
        offerNow.includes(topic) ? { ...topic, status: 'offered' as const } : topic,
      ),
      ...newPending,
    ];
    this.emitPlan(plan, topics, policy, false);
    return {
      ...transactionPatch,
      ...(policy
        ? { transaction_interruption: 'intent_shift', next_state: transactionPatch.next_state ?? null }
        : {}),
      answer: parts.join('\n\n'),
      intent: primary.topic.intent,
      domain: primary.topic.domain ?? undefined,
      mcp_tools: primary.topic.tools,
      active_agent: primary.topic.agent,
      mcp_results: completed.flatMap((result) => result.patch?.mcp_results ?? []),
      rag_results: completed.flatMap((result) => result.patch?.rag_results ?? []),
      supervisor_plan: this.planRecord(planId, plan, topics, policy, false),
      supervisor_results: results.map((result) => this.resultRecord(result)),
      agent_responses: completed.map((result) => ({
        agent: result.topic.agent,
        intent: result.topic.intent,
        answer: result.patch?.answer ?? '',
      })),
      multi_intent_plan: this.multiIntentPlan(planId, plan, topics, results),
      pending_topics: pendingTopics,
    };
  }

  /** LLM plan, else the keyword stage, else the fallback agent. */
  private async plan(
    message: string,
    state: TurnState,
    pending: PendingTopic[],
    policy: StatePolicyConfig | undefined,
    transactionIntent: IntentConfig | undefined,
  ): Promise<Plan> {
    const rejected: SupervisorPlan['rejected'] = [];
    const llmPlan = await this.planWithLlm(message, state, pending, policy, transactionIntent, rejected);
    if ('entries' in llmPlan) {
      return { source: 'llm', entries: llmPlan.entries, rejected, llmRejection: null };
    }
    const keyword = this.catalogue.keywords.match(message);
    if (keyword) {
      return {
        source: 'keyword',
        entries: [{ intent: keyword.intent, confidence: keyword.confidence }],
        rejected,
        llmRejection: llmPlan,
      };
    }
    return {
      source: 'fallback',
      entries: [{ intent: null, confidence: 0.1 }],
      rejected,
      llmRejection: llmPlan,
    };
  }

  private async planWithLlm(
    message: string,
    state: TurnState,
    pending: PendingTopic[],
    policy: StatePolicyConfig | undefined,
    transactionIntent: IntentConfig | undefined,
    rejected: SupervisorPlan['rejected'],
  ): Promise<{ entries: PlanEntry[] } | { reason: string; detail: string }> {
    if (!this.options.llmEnabled) return { reason: 'disabled', detail: 'ENABLE_LLM_ROUTER=false' };
    if (message.trim() === '') return { reason: 'empty_message', detail: 'nothing to plan' };
    const max = this.options.settings.max_intents;
    const payload = {
      message,
      allowed_intents: this.catalogue.cards(),
      session_context: {
        active_agent: policy?.agent ?? this.previousAgent(state),
        previous_intent: this.catalogue.previousIntent(state)?.name ?? null,
      },
      ...(pending.length > 0
        ? {
            pending_topics: pending.map((topic) => ({
              intent: topic.intent,
              label: topic.label,
              source_text: topic.source_text,
            })),
          }
        : {}),
      ...(policy
        ? {
            transaction_context: {
              state: policy.state,
              agent: policy.agent,
              intent: transactionIntent?.name ?? null,
              missing_parameters: state.missing_parameters ?? [],
            },
          }
        : {}),
    };
    const result = await this.llm.structured({
      profile: this.options.profile,
      messages: [
        { role: 'system', content: this.plannerPrompt },
        { role: 'user', content: JSON.stringify(payload) },
      ],
      output: planOutput,
    });
    if (!result.ok) return { reason: result.reason, detail: result.detail };
    const entries: PlanEntry[] = [];
    for (const item of result.value.intents) {
      const intent = this.catalogue.intent(item.intent);
      const reason = !intent
        ? 'unknown_intent'
        : item.confidence < this.options.threshold
          ? 'below_threshold'
          : entries.some((entry) => entry.intent?.name === intent.name)
            ? 'duplicate'
            : entries.length >= max
              ? 'over_limit'
              : null;
      if (reason || !intent) rejected.push({ intent: item.intent, confidence: item.confidence, reason });
      else entries.push({ intent, confidence: item.confidence });
    }
    if (entries.length === 0) {
      return { reason: 'empty_plan', detail: `no accepted intent (${rejected.length} rejected)` };
    }
    return { entries };
  }

  /** The transaction keeps the turn unless a valid LLM plan names only other topics (the state policy rule). */
  private holds(plan: Plan, policy: StatePolicyConfig, transactionIntent: IntentConfig | undefined): boolean {
    if (plan.source !== 'llm') return true;
    return plan.entries.some((entry) =>
      transactionIntent
        ? entry.intent?.name === transactionIntent.name
        : entry.intent?.agent === policy.agent,
    );
  }

  /** The pending transaction's agent answers on the real state; other planned topics wait for a later turn. */
  private async continueTransaction(
    state: TurnState,
    runAgent: AgentRunner,
    planId: string,
    plan: Plan,
    pending: PendingTopic[],
    policy: StatePolicyConfig,
    transactionIntent: IntentConfig | undefined,
  ): Promise<TurnPatch> {
    const message = turnText(state);
    const agent = policy.agent;
    const topic: Topic = {
      operation_id: 'op-1',
      intent: `${STATE_INTENT_PREFIX}${policy.state}`,
      agent,
      domain: transactionIntent?.domain ?? state.domain ?? null,
      tools: transactionIntent ? [...transactionIntent.mcp_tools] : [...routeTools(state)],
      label: transactionIntent?.label ?? transactionIntent?.name ?? policy.state,
      confidence: 1,
      source_text: message,
      transactional: true,
      disposition: 'execute',
      resumed: false,
    };
    // Only a valid LLM plan names extra topics; a keyword or fallback plan is a guess, not a request to keep.
    const extra = plan.source === 'llm' ? plan.entries : [];
    const others: Topic[] = extra
      .filter((entry) => entry.intent && entry.intent.name !== transactionIntent?.name)
      .map((entry, index) => ({
        ...this.topicFor(entry, `op-${index + 2}`, message),
        disposition: 'defer' as const,
        defer_reason: 'transaction_pending' as const,
      }))
      .filter((other) => !pending.some((p) => p.intent === other.intent));
    const started = performance.now();
    const patch = await runAgent(agent, {
      ...state,
      route: agent,
      active_agent: agent,
      intent: topic.intent,
      domain: topic.domain ?? undefined,
      mcp_tools: topic.tools,
      available_mcp_tools: topic.tools,
    });
    const result: TopicResult = {
      topic,
      patch,
      error: null,
      latency_ms: Math.round(performance.now() - started),
    };
    const topics = [topic, ...others];
    const newPending = others.map((other) => this.toPending(other, planId, state.turn));
    this.emitPlan(plan, topics, policy, true);
    return {
      ...patch,
      intent: topic.intent,
      domain: topic.domain ?? undefined,
      mcp_tools: topic.tools,
      active_agent: agent,
      next_state: patch.next_state === undefined ? policy.state : patch.next_state,
      supervisor_plan: this.planRecord(planId, plan, topics, policy, true),
      supervisor_results: [this.resultRecord(result)],
      agent_responses: [{ agent, intent: topic.intent, answer: patch.answer ?? '' }],
      multi_intent_plan: this.multiIntentPlan(planId, plan, topics, [result]),
      pending_topics: [...pending, ...newPending],
    };
  }

  /** Plan entries as topics: the first transactional one runs, later transactional ones wait. */
  private topicsOf(plan: Plan, message: string, pending: PendingTopic[]): Topic[] {
    let transactionalTaken = false;
    return plan.entries.map((entry, index) => {
      const topic = this.topicFor(entry, `op-${index + 1}`, message);
      const resumedFrom = pending.find((p) => p.intent === topic.intent);
      if (resumedFrom) {
        topic.resumed = true;
        // The user's reply ("sim, pode seguir") rarely restates the request, so the agent gets both.
        topic.source_text = `${resumedFrom.source_text}\n${message}`;
      }
      if (topic.transactional) {
        if (transactionalTaken) {
          topic.disposition = 'defer';
          topic.defer_reason = 'transactional_beyond_first';
        }
        transactionalTaken = true;
      }
      return topic;
    });
  }

  private topicFor(entry: PlanEntry, operationId: string, message: string): Topic {
    const intent = entry.intent;
    return {
      operation_id: operationId,
      intent: intent?.name ?? 'fallback',
      agent: intent ? intent.agent : this.options.fallbackAgent,
      domain: intent?.domain ?? null,
      tools: intent ? [...intent.mcp_tools] : [],
      label: intent?.label ?? intent?.name ?? 'fallback',
      confidence: entry.confidence,
      source_text: message,
      transactional: intent ? this.catalogue.isTransactional(intent) : false,
      disposition: 'execute',
      resumed: false,
    };
  }

  /** One agent on an isolated copy: no transaction field of the conversation or of another topic leaks in. */
  private async execute(state: TurnState, runAgent: AgentRunner, topic: Topic): Promise<TopicResult> {
    const isolated: TurnState = {
      ...structuredClone(state),
      sanitized_input: topic.source_text,
      route: topic.agent,
      active_agent: topic.agent,
      intent: topic.intent,
      domain: topic.domain ?? undefined,
      mcp_tools: topic.tools,
      available_mcp_tools: topic.tools,
      ...noPendingTransaction(),
      next_state: null,
      transaction_status: null,
      transaction_pre_validation: null,
      tool_policy_result: null,
      mcp_results: [],
      rag_results: [],
      pending_topics: [],
    };
    const started = performance.now();
    try {
      const patch = await runAgent(topic.agent, isolated);
      return { topic, patch, error: null, latency_ms: Math.round(performance.now() - started) };
    } catch (error) {
      return { topic, patch: null, error, latency_ms: Math.round(performance.now() - started) };
    }
  }

  /** Only the transactional topic's transaction keys reach the conversation state. */
  private transactionPatch(result: TopicResult | null): TurnPatch {
    return result?.patch ? transactionSliceOf(result.patch) : {};
  }

  private toPending(topic: Topic, planId: string, turn: number): PendingTopic {
    return {
      operation_id: topic.operation_id,
      plan_id: planId,
      intent: topic.intent,
      agent: topic.agent,
      domain: topic.domain,
      tools: topic.tools,
      label: topic.label,
      source_text: topic.source_text,
      disposition: 'defer',
      status: 'deferred',
      reason: topic.defer_reason ?? 'transactional_beyond_first',
      created_turn: turn,
    };
  }

  private transactionIntentOf(state: TurnState, policy: StatePolicyConfig): IntentConfig | undefined {
    const intent = this.catalogue.transactionIntent(state);
    return intent?.agent === policy.agent ? intent : undefined;
  }

  /** The agent of the previous turn; in supervisor mode the routing node overwrote it, so metadata carries it. */
  private previousAgent(state: TurnState): string | null {
    if (this.catalogue.isAgent(state.active_agent)) return state.active_agent;
    return state.route_decision?.metadata.previous_agent ?? null;
  }

  private planRecord(
    planId: string,
    plan: Plan,
    topics: Topic[],
    policy: StatePolicyConfig | undefined,
    held: boolean,
  ): SupervisorPlan {
    return {
      plan_id: planId,
      source: plan.source,
      intents: topics.map((topic) => ({
        intent: topic.intent,
        agent: topic.agent,
        confidence: topic.confidence,
        disposition: topic.disposition,
        resumed: topic.resumed,
      })),
      rejected: plan.rejected,
      llm_rejection: plan.llmRejection,
      state_policy: policy?.state ?? null,
      held_by_state_policy: held,
    };
  }

  private resultRecord(result: TopicResult): SupervisorResult {
    return {
      operation_id: result.topic.operation_id,
      intent: result.topic.intent,
      agent: result.topic.agent,
      status: result.patch ? 'completed' : 'failed',
      answer: result.patch?.answer ?? null,
      error: result.patch ? null : errorText(result.error),
      latency_ms: result.latency_ms,
    };
  }

  private multiIntentPlan(
    planId: string,
    plan: Plan,
    topics: Topic[],
    results: TopicResult[],
  ): MultiIntentPlan {
    const statusOf = (topic: Topic): MultiIntentPlan['operations'][number]['status'] => {
      if (topic.disposition === 'defer') return 'deferred';
      const result = results.find((r) => r.topic === topic);
      return result?.patch ? 'completed' : 'failed';
    };
    const operations = topics.map((topic) => ({
      operation_id: topic.operation_id,
      intent: topic.intent,
      agent: topic.agent,
      domain: topic.domain,
      tools: topic.tools,
      source_text: topic.source_text,
      disposition: topic.disposition,
      status: statusOf(topic),
    }));
    const failed = operations.some((operation) => operation.status === 'failed');
    return {
      plan_id: planId,
      execution_mode: 'supervisor',
      source: plan.source,
      operations,
      status: failed ? 'partial' : 'completed',
    };
  }

  private emitPlan(plan: Plan, topics: Topic[], policy: StatePolicyConfig | undefined, held: boolean): void {
    this.events.emit('router.supervisor.plan', {
      source: plan.source,
      intents: topics.filter((t) => t.disposition === 'execute').map((t) => t.intent),
      deferred: topics.filter((t) => t.disposition === 'defer').map((t) => t.intent),
      state_policy: policy?.state ?? null,
      held,
      llm_rejection: plan.llmRejection?.reason ?? null,
    });
  }
}
