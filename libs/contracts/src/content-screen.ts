import type { AgentState } from './agent-state';

/** Guardrail stages for content that enters a prompt from outside the conversation. */
export type ScreenedStage = 'retrieval' | 'tool';

export interface ContentScreenRequest {
  stage: ScreenedStage;
  /** Where the content comes from (a knowledge document, a tool name): recorded with the guardrail events. */
  source: string;
  text: string;
  state: Readonly<AgentState>;
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
