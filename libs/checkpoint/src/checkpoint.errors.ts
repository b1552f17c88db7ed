import { CodedError } from '@agent/contracts';

export const CHECKPOINT_ERROR_CODES = [
  'TURN_LOCK_TIMEOUT',
  'CONVERSATION_MOVED_ON',
  'AGENT_MISMATCH',
  'INVALID_CURSOR',
] as const;
export type CheckpointErrorCode = (typeof CHECKPOINT_ERROR_CODES)[number];

/** The conversation's lease could not be obtained within TURN_LOCK_TIMEOUT_MS (HTTP 409 + Retry-After). */
export class TurnLockTimeoutError extends CodedError<CheckpointErrorCode> {
  constructor(
    readonly conversationKey: string,
    readonly waitedMs: number,
    retryAfterSeconds: number,
  ) {
    super(
      'TURN_LOCK_TIMEOUT',
      `conversation ${conversationKey} is busy with another turn (waited ${waitedMs} ms)`,
      { retryAfterSeconds },
    );
  }
}

/** A commit whose expected head is not the current head, or whose lease was lost: refused instead of forking. */
export class CheckpointFencingError extends CodedError<CheckpointErrorCode> {
  constructor(
    readonly conversationKey: string,
    readonly expectedHead: number,
  ) {
    super(
      'CONVERSATION_MOVED_ON',
      `conversation ${conversationKey} moved on: version ${expectedHead} is no longer the head, or the lease was lost`,
    );
  }
}

/** The session belongs to another agent_id (HTTP 409). */
export class AgentMismatchError extends CodedError<CheckpointErrorCode> {
  constructor(
    readonly conversationKey: string,
    readonly boundAgentId: string,
    readonly requestedAgentId: string,
  ) {
    super(
      'AGENT_MISMATCH',
      `session ${conversationKey} is bound to agent_id "${boundAgentId}", not "${requestedAgentId}"`,
    );
  }
}

/** A cursor of the admin session list that encodeSessionCursor did not write. */
export class InvalidCursorError extends CodedError<CheckpointErrorCode> {
  constructor() {
    super('INVALID_CURSOR', 'cursor is not valid');
  }
}
