import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse, YAMLParseError } from 'yaml';
import { z } from 'zod';
import type { RoutingFile } from '@agent/config';
import { CONTINUITY_DECISIONS, ContinuityDecision } from '@agent/contracts';

/** Languages the set covers; a new one is added here and in the README. */
export const DATASET_LANGUAGES = ['pt', 'en', 'es'] as const;
export type DatasetLanguage = (typeof DATASET_LANGUAGES)[number];

/** A conversation whose turns span several domains of the catalogue. */
export const MIXED_DOMAIN = 'mixed';

/**
 * The situations a turn exercises. A closed list, so a typo cannot silently create a new category in the report;
 * the meaning of each is in eval/README.md.
 */
export const TURN_TAGS = [
  'follow_up',
  'answer_to_agent',
  'confirmation',
  'short_ack',
  'short_message',
  'correction',
  'new_subject_same_agent',
  'same_intent_new_item',
  'domain_switch',
  'topic_return',
  'polite_not_ending',
  'thanks_new_question',
  'handoff',
  'handoff_mid_confirmation',
  'closing',
  'first_turn_session_action',
  'mentions_person',
  'ambiguous_words',
  'mixed_language',
  'indirect',
] as const;
export type TurnTag = (typeof TURN_TAGS)[number];

/** The hard cases the shipped set must hold, each in more than one language. */
export const REQUIRED_HARD_CASES: readonly TurnTag[] = [
  'short_ack',
  'short_message',
  'correction',
  'new_subject_same_agent',
  'topic_return',
  'polite_not_ending',
  'thanks_new_question',
  'handoff_mid_confirmation',
  'indirect',
];

const text = z.string().trim().min(1, 'must not be empty');
const name = z.string().trim().min(1, 'must not be empty').nullable();

const turnSchema = z
  .object({
    user: text,
    active_agent: name,
    previous_intent: name,
    previous_domain: name,
    next_state: z.string().trim().min(1, 'must not be empty').nullable().optional(),
    label: z.enum(CONTINUITY_DECISIONS),
    tags: z.array(z.enum(TURN_TAGS)).default([]),
    assistant: text.optional(),
  })
  .strict();

const conversationSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes'),
    language: z.enum(DATASET_LANGUAGES),
    domain: text,
    title: text,
    turns: z.array(turnSchema).min(1, 'a conversation needs at least one turn'),
  })
  .strict();

const datasetSchema = z
  .object({
    version: z.literal(1),
    conversations: z.array(conversationSchema).min(1, 'the dataset needs at least one conversation'),
  })
  .strict();

export type DatasetTurn = z.output<typeof turnSchema>;
export type DatasetConversation = z.output<typeof conversationSchema>;
export type ContinuityDataset = z.output<typeof datasetSchema>;

/** The part of config/routing.yaml the dataset is checked against. */
export type DatasetCatalogue = Pick<RoutingFile, 'intents' | 'state_policies'>;

export class DatasetValidationError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`Invalid labelled set ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'DatasetValidationError';
  }
}

export type DatasetValidation = { ok: true; dataset: ContinuityDataset } | { ok: false; problems: string[] };

/**
 * Validates a parsed dataset: the zod schema first, then the checks that need the catalogue and the order of
 * turns. Every problem names the conversation (its id when it has one) and the 1-based turn.
 */
export function validateDataset(raw: unknown, catalogue: DatasetCatalogue): DatasetValidation {
  const parsed = datasetSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    return { ok: false, problems: parsed.error.issues.map((issue) => describeIssue(raw, issue)) };
  }
  const problems = checkConsistency(parsed.data, catalogue);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, dataset: parsed.data };
}

/** Reads, parses and validates a dataset file; throws DatasetValidationError naming the file. */
export function loadDataset(filePath: string, catalogue: DatasetCatalogue): ContinuityDataset {
  const absolute = resolve(filePath);
  if (!existsSync(absolute)) throw new DatasetValidationError(absolute, [`file not found: ${absolute}`]);
  let raw: unknown;
  try {
    raw = parse(readFileSync(absolute, 'utf8'));
  } catch (error) {
    const detail = error instanceof YAMLParseError ? error.message : String(error);
    throw new DatasetValidationError(absolute, [`not valid YAML: ${detail}`]);
  }
  const result = validateDataset(raw, catalogue);
  if (!result.ok) throw new DatasetValidationError(absolute, result.problems);
  return result.dataset;
}

export function where(conversation: string, turn?: number): string {
  return turn === undefined
    ? `conversation "${conversation}"`
    : `conversation "${conversation}" turn ${turn}`;
}

function describeIssue(raw: unknown, issue: z.ZodIssue): string {
  const [root, conversationIndex, key, turnIndex, ...rest] = issue.path;
  if (root !== 'conversations' || typeof conversationIndex !== 'number') {
    return `${issue.path.join('.') || '(root)'}: ${issue.message}`;
  }
  const id = rawConversationId(raw, conversationIndex);
  const label = id !== null ? `"${id}"` : `#${conversationIndex + 1}`;
  if (key === 'turns' && typeof turnIndex === 'number') {
    const field = rest.length > 0 ? ` ${rest.join('.')}` : '';
    return `conversation ${label} turn ${turnIndex + 1}${field}: ${issue.message}`;
  }
  const field = [key, turnIndex, ...rest].filter((part) => part !== undefined).join('.');
  return `conversation ${label}${field ? ` ${field}` : ''}: ${issue.message}`;
}

function rawConversationId(raw: unknown, index: number): string | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const conversations = (raw as { conversations?: unknown }).conversations;
  if (!Array.isArray(conversations)) return null;
  const entry: unknown = conversations[index];
  if (typeof entry !== 'object' || entry === null) return null;
  const id = (entry as { id?: unknown }).id;
  return typeof id === 'string' && id.trim() !== '' ? id : null;
}

function checkConsistency(dataset: ContinuityDataset, catalogue: DatasetCatalogue): string[] {
  const problems: string[] = [];
  const intents = new Map(catalogue.intents.filter((i) => i.enabled).map((i) => [i.name, i]));
  const agents = new Set([...intents.values()].map((i) => i.agent));
  const domains = new Set([...intents.values()].map((i) => i.domain));
  const states = new Map(catalogue.state_policies.map((p) => [p.state, p.agent]));
  const seen = new Set<string>();

  for (const conversation of dataset.conversations) {
    const id = conversation.id;
    if (seen.has(id)) problems.push(`${where(id)}: duplicate id`);
    seen.add(id);
    if (conversation.domain !== MIXED_DOMAIN && !domains.has(conversation.domain)) {
      problems.push(
        `${where(id)}: domain "${conversation.domain}" is not a catalogue domain (${[...domains].join(', ')}) or "${MIXED_DOMAIN}"`,
      );
    }
    conversation.turns.forEach((turn, index) => {
      const at = where(id, index + 1);
      const isLast = index === conversation.turns.length - 1;
      if (turn.active_agent !== null && !agents.has(turn.active_agent)) {
        problems.push(`${at}: active_agent "${turn.active_agent}" owns no enabled intent of routing.yaml`);
      }
      if ((turn.active_agent === null) !== (turn.previous_intent === null)) {
        problems.push(`${at}: active_agent and previous_intent must be both set or both null`);
      }
      const intent = turn.previous_intent !== null ? intents.get(turn.previous_intent) : undefined;
      if (turn.previous_intent !== null && !intent) {
        problems.push(
          `${at}: previous_intent "${turn.previous_intent}" is not an enabled intent of routing.yaml`,
        );
      }
      if (intent && turn.active_agent !== null && intent.agent !== turn.active_agent) {
        problems.push(
          `${at}: previous_intent "${intent.name}" belongs to ${intent.agent}, not to active_agent ${turn.active_agent}`,
        );
      }
      if (intent && turn.previous_domain !== intent.domain) {
        problems.push(
          `${at}: previous_domain must be "${intent.domain}" (the domain of ${intent.name}), got ${JSON.stringify(turn.previous_domain)}`,
        );
      }
      if (!intent && turn.previous_intent === null && turn.previous_domain !== null) {
        problems.push(`${at}: previous_domain must be null when there is no previous_intent`);
      }
      if (
        conversation.domain !== MIXED_DOMAIN &&
        turn.previous_domain !== null &&
        turn.previous_domain !== conversation.domain
      ) {
        problems.push(
          `${at}: previous_domain "${turn.previous_domain}" differs from the conversation domain "${conversation.domain}" (use "${MIXED_DOMAIN}")`,
        );
      }
      if (turn.next_state) {
        const owner = states.get(turn.next_state);
        if (owner === undefined) {
          problems.push(`${at}: next_state "${turn.next_state}" is not a state policy of routing.yaml`);
        } else if (owner !== turn.active_agent) {
          problems.push(
            `${at}: next_state "${turn.next_state}" belongs to ${owner}, not to ${turn.active_agent}`,
          );
        }
      }
      if (turn.label === 'CONTINUE' && turn.active_agent === null) {
        problems.push(
          `${at}: label CONTINUE needs an active_agent (without one the service turns it into ROUTE)`,
        );
      }
      if (turn.label === 'END_SESSION' && !isLast) {
        problems.push(`${at}: END_SESSION must be the last turn (an ended session classifies nothing more)`);
      }
      if (!isLast && turn.assistant === undefined) {
        problems.push(`${at}: assistant reply missing (it is the history of the next turn)`);
      }
      const next = conversation.turns[index + 1];
      if (turn.label === 'CONTINUE' && next && next.active_agent !== turn.active_agent) {
        problems.push(
          `${where(id, index + 2)}: active_agent must stay ${turn.active_agent} after a CONTINUE turn, got ${String(next.active_agent)}`,
        );
      } else if (turn.label === 'CONTINUE' && next && next.previous_intent !== turn.previous_intent) {
        problems.push(
          `${where(id, index + 2)}: previous_intent must stay ${String(turn.previous_intent)} after a CONTINUE turn, got ${String(next.previous_intent)}`,
        );
      }
    });
  }
  return problems;
}

export interface DatasetStats {
  conversations: number;
  turns: number;
  max_depth: number;
  by_label: Record<ContinuityDecision, number>;
  by_language: Record<string, { conversations: number; turns: number }>;
  by_domain: Record<string, { conversations: number; turns: number }>;
  by_tag: Record<string, number>;
  by_depth: Record<string, number>;
  label_by_language: Record<string, Record<ContinuityDecision, number>>;
  turns_with_active_agent: number;
}

export function datasetStats(dataset: ContinuityDataset): DatasetStats {
  const byLabel = zeroLabels();
  const byLanguage: DatasetStats['by_language'] = {};
  const byDomain: DatasetStats['by_domain'] = {};
  const byTag: Record<string, number> = Object.fromEntries(TURN_TAGS.map((tag) => [tag, 0]));
  const byDepth: Record<string, number> = {};
  const labelByLanguage: DatasetStats['label_by_language'] = {};
  let turns = 0;
  let maxDepth = 0;
  let withAgent = 0;
  for (const conversation of dataset.conversations) {
    const language = (byLanguage[conversation.language] ??= { conversations: 0, turns: 0 });
    const domain = (byDomain[conversation.domain] ??= { conversations: 0, turns: 0 });
    const labels = (labelByLanguage[conversation.language] ??= zeroLabels());
    language.conversations++;
    domain.conversations++;
    maxDepth = Math.max(maxDepth, conversation.turns.length);
    conversation.turns.forEach((turn, index) => {
      turns++;
      language.turns++;
      domain.turns++;
      byLabel[turn.label]++;
      labels[turn.label]++;
      if (turn.active_agent !== null) withAgent++;
      byDepth[String(index + 1)] = (byDepth[String(index + 1)] ?? 0) + 1;
      for (const tag of turn.tags) byTag[tag]++;
    });
  }
  return {
    conversations: dataset.conversations.length,
    turns,
    max_depth: maxDepth,
    by_label: byLabel,
    by_language: byLanguage,
    by_domain: byDomain,
    by_tag: byTag,
    by_depth: byDepth,
    label_by_language: labelByLanguage,
    turns_with_active_agent: withAgent,
  };
}

function zeroLabels(): Record<ContinuityDecision, number> {
  return { CONTINUE: 0, ROUTE: 0, HUMAN_HANDOFF: 0, END_SESSION: 0 };
}
