import type { ToolConfig } from '@agent/config';
import type {
  ActiveTransaction,
  DomainAgentNode,
  McpToolResult,
  PendingToolCall,
  ToolArguments,
  TurnPatch,
  TurnState,
} from '@agent/contracts';
import type { PreparationError, PrepareResult } from '@agent/mcp';
import type { TransactionEvent } from './transaction.events';
import type { TransactionWording } from './transaction.wording';

export type TransactionPatch = TurnPatch;

/**
 * What a transition reads besides the state, bound to the turn: configuration and wording, argument validation,
 * ids and the clock. Lookups only; the slow work (tool calls, model calls) is asked for by a step instead.
 */
export interface TransactionRules {
  /** Unclear answers in a row after which the operation is given up. */
  readonly maxAttempts: number;
  readonly wording: TransactionWording;
  /** The tool's tools.yaml entry; a tool that is not declared there is a bug, not a customer error. */
  tool(toolName: string): ToolConfig;
  stateDomain(node: DomainAgentNode): string;
  /** The agent_id's tool policy, else tools.yaml. */
  confirmationRequired(toolName: string): boolean;
  /** Maps and validates arguments without calling (invalid values are dropped, to be collected again). */
  prepare(toolName: string, args: ToolArguments): PrepareResult;
  /** The result of a call that could not be prepared (it reports the refusal). */
  refuse(toolName: string, error: PreparationError): McpToolResult;
  /** Values of `fields` the tool's `extract_pattern`s find in the turn's text. */
  patternValues(toolName: string, config: ToolConfig, fields: readonly string[]): ToolArguments;
  newId(): string;
  now(): string;
}

/** What every transition reads: the turn's state (never changed in place) and the rules. */
export interface TransactionTurn {
  state: TurnState;
  rules: TransactionRules;
}

/** A tool call a step needs before it can go on. */
export type ToolRequest =
  | { purpose: 'pre_validation'; tool_name: string; arguments: ToolArguments }
  | { purpose: 'execution'; pending: PendingToolCall; idempotency_key: string };

/** The answer after an execution, explained by the agent's model. */
export interface CompositionRequest {
  transaction: ActiveTransaction;
  result: McpToolResult;
  status: 'COMPLETED' | 'FAILED';
}

export interface DoneStep {
  kind: 'done';
  events: TransactionEvent[];
  patch: TransactionPatch;
}

/**
 * The result of a transition: its events (emitted in order before anything else happens) and either the state
 * patch that ends the turn's work on the transaction, or the call it needs first and the transition that takes
 * the call's result. The engine runs the calls; the transitions stay pure.
 */
export type TransactionStep =
  | DoneStep
  | {
      kind: 'call';
      events: TransactionEvent[];
      request: ToolRequest;
      then: (result: McpToolResult) => TransactionStep;
    }
  | {
      kind: 'compose';
      events: TransactionEvent[];
      request: CompositionRequest;
      /** null when the model could not answer: the template answers. */
      then: (answer: string | null) => TransactionStep;
    };

export function done(patch: TransactionPatch, events: TransactionEvent[] = []): DoneStep {
  return { kind: 'done', events, patch };
}

/** `step` after `first`: first's events come first, and the final patch applies over first's patch. */
export function after(first: DoneStep, step: TransactionStep): TransactionStep {
  const events = [...first.events, ...step.events];
  const rest = done(first.patch);
  switch (step.kind) {
    case 'done':
      return done({ ...first.patch, ...step.patch }, events);
    case 'call':
      return { ...step, events, then: (result: McpToolResult) => after(rest, step.then(result)) };
    case 'compose':
      return { ...step, events, then: (answer: string | null) => after(rest, step.then(answer)) };
  }
}
