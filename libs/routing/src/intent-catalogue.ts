import type { IntentConfig, RoutingFile, StatePolicyConfig, ToolsFile } from '@agent/config';
import type { TurnState } from '@agent/contracts';
import { KeywordIndex } from './keyword-matcher';

/** What the router and the supervisor planner show the LLM about one intent. */
export interface IntentCard {
  name: string;
  description: string;
  agent: string;
  examples: string[];
}

const MAX_EXAMPLES = 3;
export const STATE_INTENT_PREFIX = 'state:';

/** The validated routing.yaml as lookups: enabled intents, state policies, keywords, transactional intents. */
export class IntentCatalogue {
  readonly enabled: readonly IntentConfig[];
  readonly keywords: KeywordIndex;
  private readonly byName: Map<string, IntentConfig>;
  private readonly policies: Map<string, StatePolicyConfig>;
  private readonly transactional: Set<string>;
  private readonly intentCards: readonly IntentCard[];
  private readonly agents: ReadonlySet<string>;

  constructor(routing: RoutingFile, tools: ToolsFile) {
    this.enabled = routing.intents.filter((intent) => intent.enabled);
    this.byName = new Map(this.enabled.map((intent) => [intent.name, intent]));
    this.policies = new Map(routing.state_policies.map((policy) => [policy.state, policy]));
    this.keywords = new KeywordIndex(this.enabled);
    this.transactional = new Set(
      this.enabled
        .filter((intent) =>
          intent.mcp_tools.some((tool) => tools.tools[tool]?.operation_type === 'transactional'),
        )
        .map((intent) => intent.name),
    );
    // Every agent the file names is a graph agent (ConfigFilesService checks it).
    this.agents = new Set([
      routing.router.fallback_agent,
      ...routing.state_policies.map((policy) => policy.agent),
      ...routing.intents.map((intent) => intent.agent),
    ]);
    this.intentCards = this.enabled.map((intent) => ({
      name: intent.name,
      description: intent.description,
      agent: intent.agent,
      examples: intent.examples.slice(0, MAX_EXAMPLES),
    }));
  }

  /** An enabled intent by name; disabled and unknown names are both absent. */
  intent(name: string | null | undefined): IntentConfig | undefined {
    return name ? this.byName.get(name) : undefined;
  }

  /** A domain agent this routing file sends turns to (not a session node, the supervisor or an old name). */
  isAgent(name: unknown): name is string {
    return typeof name === 'string' && this.agents.has(name);
  }

  policy(state: string | null | undefined): StatePolicyConfig | undefined {
    return state ? this.policies.get(state) : undefined;
  }

  /** An intent whose tools include a transactional one (it may start a confirmation flow). */
  isTransactional(intent: IntentConfig): boolean {
    return this.transactional.has(intent.name);
  }

  /** What the router and the planner show the model about the catalogue: static, so built once. */
  cards(): readonly IntentCard[] {
    return this.intentCards;
  }

  /**
   * The catalogue intent of the previous turn. While a state policy holds (`state:<STATE>`) or in supervisor
   * mode (`supervisor`), `state.intent` is not a catalogue name, so the previous decision's metadata carries it.
   */
  previousIntent(state: TurnState): IntentConfig | undefined {
    const metadata = state.route_decision?.metadata;
    return [state.intent, metadata?.transaction_intent, metadata?.previous_intent]
      .map((name) => this.intent(name))
      .find((intent) => intent !== undefined);
  }

  /** The intent of the pending transaction: the transaction's own record first, else the previous intent. */
  transactionIntent(state: TurnState): IntentConfig | undefined {
    return this.intent(state.active_transaction?.intent) ?? this.previousIntent(state);
  }
}
