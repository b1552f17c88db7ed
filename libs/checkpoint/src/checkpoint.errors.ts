/** The conversation's lease could not be obtained within TURN_LOCK_TIMEOUT_MS (HTTP 409 + Retry-After). */
export class TurnLockTimeoutError extends Error {
  constructor(
    readonly conversationKey: string,
    readonly waitedMs: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`conversation ${conversationKey} is busy with another turn (waited ${waitedMs} ms)`);
    this.name = 'TurnLockTimeoutError';
  }
}

/** A commit whose expected head is not the current head, or whose lease was lost: refused instead of forking. */
export class CheckpointFencingError extends Error {
  constructor(
    readonly conversationKey: string,
    readonly expectedHead: number,
  ) {
    super(
      `conversation ${conversationKey} moved on: version ${expectedHead} is no longer the head, or the lease was lost`,
    );
    this.name = 'CheckpointFencingError';
  }
}

/** The session belongs to another agent_id (HTTP 409). */
export class AgentMismatchError extends Error {
  constructor(
    readonly conversationKey: string,
    readonly boundAgentId: string,
    readonly requestedAgentId: string,
  ) {
    super(`session ${conversationKey} is bound to agent_id "${boundAgentId}", not "${requestedAgentId}"`);
    this.name = 'AgentMismatchError';
  }
}

export class CheckpointIntegrityError extends Error {
  constructor(
    readonly conversationKey: string,
    readonly version: number,
    reason: string,
  ) {
    super(`checkpoint ${conversationKey}@${version} failed integrity: ${reason}`);
    this.name = 'CheckpointIntegrityError';
  }
}
