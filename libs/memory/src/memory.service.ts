import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { memoryConfig } from '@agent/config';
import {
  type ContentScreen,
  type LongTermMemory,
  type MemoryWriteResult,
  type TurnState,
  turnText,
} from '@agent/contracts';
import { LlmService } from '@agent/llm';
import { LongTermMemoryStore } from './long-term-memory.store';
import {
  extractionMessages,
  memoryFactsOutput,
  renderMemoryContext,
  validateExtraction,
} from './memory-extraction';
import { MemoryExtractionError } from './memory.errors';
import type {
  LongTermMemoryItem,
  MemoryFact,
  MemorySubject,
  SessionPurge,
  SubjectPurge,
} from './memory.types';

export interface LoadedMemory {
  items: LongTermMemory[];
  context: string;
}

const NOTHING_LOADED: LoadedMemory = { items: [], context: '' };

/**
 * Facade of MemoryModule: long-term memory of one subject (a user or business customer key, never a session)
 * inside one tenant and agent. Failures are thrown: the workflow isolates them (docs/architecture.md#long-term-memory).
 */
@Injectable()
export class MemoryService {
  constructor(
    @Inject(memoryConfig.KEY) private readonly config: ConfigType<typeof memoryConfig>,
    private readonly store: LongTermMemoryStore,
    private readonly llm: LlmService,
  ) {}

  get enabled(): boolean {
    return this.config.ENABLE_LONG_TERM_MEMORY;
  }

  /**
   * The subject's top LONG_TERM_MEMORY_MAX_CONTEXT_ITEMS items by confidence then recency, at or above
   * LONG_TERM_MEMORY_MIN_CONFIDENCE, and their `- key: value` rendering. Nothing without a subject.
   */
  async load(state: TurnState): Promise<LoadedMemory> {
    const subject = this.enabled ? subjectOf(state) : null;
    if (!subject) return NOTHING_LOADED;
    const items = await this.store.search(subject, {
      limit: this.config.LONG_TERM_MEMORY_MAX_CONTEXT_ITEMS,
      minConfidence: this.config.LONG_TERM_MEMORY_MIN_CONFIDENCE,
    });
    return { items: items.map(serialize), context: renderMemoryContext(items) };
  }

  /**
   * Extracts durable facts from this turn's message with the memory_extraction profile, passes each through the
   * memory guardrails (`screen`: the screens, the model verdict, personal-data masking) and upserts those they
   * let through, masked; a blocked fact is not stored and is listed in `rejected` with its rail codes.
   * Returns `{saved, discarded, rejected?}`, or `{saved: 0, skipped: <reason>}` without a model call when there
   * is nothing to do (handoff and end turns included).
   */
  async persistTurn(state: TurnState, screen: ContentScreen): Promise<MemoryWriteResult> {
    if (!this.enabled) return { saved: 0, skipped: 'disabled' };
    const subject = subjectOf(state);
    if (!subject) return { saved: 0, skipped: 'no_subject' };
    if (!this.config.LONG_TERM_MEMORY_AUTO_EXTRACT) return { saved: 0, skipped: 'auto_extract_off' };
    // A handoff or an end is no conversation to learn from (blocked turns never reach this stage).
    if (state.session_control) return { saved: 0, skipped: 'session_control' };
    // The guardrail-sanitized text when there is one: what the rails redacted must not be remembered.
    const message = turnText(state).trim();
    if (!message) return { saved: 0, skipped: 'empty_message' };

    const result = await this.llm.structured({
      profile: this.config.LONG_TERM_MEMORY_LLM_PROFILE,
      output: memoryFactsOutput,
      messages: extractionMessages({
        customerMessage: message,
        previousAssistantMessage: previousAssistantMessage(state),
        knownFacts: knownFacts(state),
      }),
    });
    if (!result.ok && result.reason === 'not_configured') return { saved: 0, skipped: 'llm_not_configured' };
    if (!result.ok) throw new MemoryExtractionError(result.reason, result.detail);
    const extracted = validateExtraction(result.value.facts, this.config.LONG_TERM_MEMORY_MIN_CONFIDENCE);
    const { facts, rejected } = await screenFacts(extracted.facts, state, screen);
    const discarded = extracted.discarded;
    const saved =
      facts.length === 0
        ? 0
        : await this.store.upsert(subject, facts, {
            session_id: state.session_id,
            message_id: state.message_id,
            metadata: { extractor: this.config.LONG_TERM_MEMORY_LLM_PROFILE, turn: state.turn },
          });
    return { saved, discarded, ...(rejected.length > 0 ? { rejected } : {}) };
  }

  /** Deletes a subject's memory in a tenant, of one agent or of every agent (privacy purge); returns how many. */
  purgeSubject(subject: SubjectPurge): Promise<number> {
    return this.store.purgeSubject(subject);
  }

  /** Deletes the facts a session produced (deleting the session); returns how many went. */
  purgeSession(session: SessionPurge): Promise<number> {
    return this.store.purgeSession(session);
  }
}

/**
 * Each fact through the memory guardrails, key and value together (a key can carry words too): the ones they let
 * through with their value as masked, and the ones they blocked with the rail codes.
 */
async function screenFacts(
  facts: readonly MemoryFact[],
  state: TurnState,
  screen: ContentScreen,
): Promise<{ facts: MemoryFact[]; rejected: NonNullable<MemoryWriteResult['rejected']> }> {
  const screened = await Promise.all(
    facts.map(async (fact) => {
      const label = `${fact.key}: `;
      const result = await screen({
        stage: 'memory',
        source: `fact:${fact.key}`,
        text: label + fact.value,
        state,
      });
      const value = result.text.startsWith(label) ? result.text.slice(label.length) : result.text;
      return { fact: { ...fact, value }, result };
    }),
  );
  return {
    facts: screened.filter((s) => !s.result.blocked && s.fact.value.trim() !== '').map((s) => s.fact),
    rejected: screened
      .filter((s) => s.result.blocked)
      .map((s) => ({ key: s.fact.key, category: s.fact.category, codes: s.result.codes })),
  };
}

/** Tenant, agent and subject key, all present; the subject key comes from the host (user_id), never the session. */
function subjectOf(state: TurnState): MemorySubject | null {
  const tenant = state.tenant_id?.trim();
  const agent = state.agent_id?.trim();
  const subject = state.long_term_memory_subject_key?.trim();
  if (!tenant || !agent || !subject) return null;
  return { tenant_id: tenant, agent_id: agent, subject_key: subject };
}

function serialize(item: LongTermMemoryItem): LongTermMemory {
  return {
    memory_id: item.memory_id,
    tenant_id: item.tenant_id,
    agent_id: item.agent_id,
    subject_key: item.subject_key,
    category: item.category,
    key: item.key,
    value: item.value,
    confidence: item.confidence,
    source_session_id: item.source_session_id,
    source_message_id: item.source_message_id,
    metadata: item.metadata,
    created_at: new Date(item.created_at).toISOString(),
    updated_at: new Date(item.updated_at).toISOString(),
  };
}

/** The facts loaded before routing, so the model reuses their keys when the customer updates one. */
function knownFacts(state: TurnState): { category: string; key: string; value: string }[] {
  return (state.long_term_memories ?? []).map(({ category, key, value }) => ({ category, key, value }));
}

/** The assistant's last message before this turn: "what name should I use?" gives "Ana" its meaning. */
function previousAssistantMessage(state: TurnState): string | null {
  const history = state.history;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i].role === 'assistant' && history[i].turn !== state.turn) return history[i].content;
  }
  return null;
}
