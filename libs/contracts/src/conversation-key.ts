declare const conversationKeyBrand: unique symbol;

/**
 * A conversation's identity in the store, the events and the API: `<tenant_id>:<session_id>`. Tenant ids cannot
 * hold `:`, so the session id is everything after the tenant's prefix. Built only by `conversationKeyOf`, read only
 * by `sessionIdOf` (and in SQL by the `turn_log_events` function, which slices the same way).
 */
export type ConversationKey = string & { readonly [conversationKeyBrand]: true };

export function conversationKeyOf(tenantId: string, sessionId: string): ConversationKey {
  return `${tenantId}:${sessionId}` as ConversationKey;
}

/** The session id of a key of `tenantId`'s. */
export function sessionIdOf(key: string, tenantId: string): string {
  return key.slice(tenantId.length + 1);
}
