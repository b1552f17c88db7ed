/*
 * The session-control events only this module knows (docs/api.md#events); the handoff request and the end, which
 * the metrics count, are in the catalogue of `@agent/contracts`.
 */
declare module '@agent/contracts' {
  interface EventPayloads {
    /** A person took a waiting conversation (admin API). */
    'session.handoff.claimed': { source: string; claimed_by: string };
    /** Back to the bot; `claimed_by` is who held the conversation, null when nobody had claimed it. */
    'session.resumed': { source: string; claimed_by?: string | null };
    /** A message arrived on an ended session: refused with the ended-session message. */
    'session.message.rejected_after_end': { message_id: string | null };
    /** A message arrived while the conversation waits for a person: the bot stays silent. */
    'session.message.held_for_human': { message_id: string | null };
  }
}

export {};
