import type { TurnState } from './turn-frame';

/**
 * Guardrail stages for content that enters a prompt from outside the conversation: knowledge passages, tool
 * results, and the long-term memory facts a turn extracted (they enter every later session's prompt).
 */
export type ScreenedStage = 'retrieval' | 'tool' | 'memory';

export interface ContentScreenRequest {
  stage: ScreenedStage;
  /** Where the content comes from (a knowledge document, a tool name, a fact's key): recorded with the events. */
  source: string;
  text: string;
  state: Readonly<TurnState>;
  /** The caller giving up (a discarded speculative draft): the screening stops and rejects with its reason. */
  signal?: AbortSignal;
}

export interface ContentScreenResult {
  /** A rail blocked the content: the caller drops it. */
  blocked: boolean;
  /** The content after sanitizing rails (masking); the original when blocked. */
  text: string;
  /** Rails that blocked it. */
  codes: string[];
}

/**
 * The retrieval and tool guardrails as a port: the workflow builds it from the guardrails and hands it to the
 * agents, which may not depend on the guardrails module themselves.
 */
export type ContentScreen = (request: ContentScreenRequest) => Promise<ContentScreenResult>;
