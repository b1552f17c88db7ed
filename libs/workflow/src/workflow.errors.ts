import type { SessionStatus } from '@agent/checkpoint';
import { CodedError } from '@agent/contracts';
import type { HandoffClaim } from '@agent/events';

export const WORKFLOW_ERROR_CODES = [
  'IDEMPOTENCY_KEY_REUSED',
  'SESSION_NOT_FOUND',
  'SESSION_STATE_CONFLICT',
  'HANDOFF_CLAIMED',
] as const;
export type WorkflowErrorCode = (typeof WORKFLOW_ERROR_CODES)[number];

/** The same message_id came with another body: replaying the stored answer would answer a different message. */
export class IdempotencyKeyReusedError extends CodedError<WorkflowErrorCode> {
  constructor(
    readonly conversationKey: string,
    readonly messageId: string,
  ) {
    super(
      'IDEMPOTENCY_KEY_REUSED',
      `message_id "${messageId}" was already used in ${conversationKey} with a different body`,
    );
  }
}

/** No session (with at least one turn) under this conversation key. */
export class SessionNotFoundError extends CodedError<WorkflowErrorCode> {
  constructor(readonly conversationKey: string) {
    super('SESSION_NOT_FOUND', `session ${conversationKey} not found`);
  }
}

/** The operation does not apply to the session's current state (e.g. a handoff on an ended session). */
export class SessionStateConflictError extends CodedError<WorkflowErrorCode> {
  constructor(
    readonly conversationKey: string,
    status: SessionStatus,
    message: string,
  ) {
    super('SESSION_STATE_CONFLICT', message, { details: { status } });
  }
}

/** Another person already took the waiting conversation. */
export class HandoffClaimedError extends CodedError<WorkflowErrorCode> {
  constructor(
    readonly conversationKey: string,
    claim: HandoffClaim,
  ) {
    super('HANDOFF_CLAIMED', `the conversation was claimed by ${claim.claimed_by} at ${claim.claimed_at}`, {
      details: { claimed_by: claim.claimed_by, claimed_at: claim.claimed_at },
    });
  }
}
