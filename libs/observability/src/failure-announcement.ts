/** Errors whose failure a `NOC.005` already announced (a workflow run that threw). */
const announced = new WeakSet<object>();

/** Records that `error` was announced, so whoever answers it later (the HTTP layer) does not announce it again. */
export function markFailureAnnounced(error: unknown): void {
  if (typeof error === 'object' && error !== null) announced.add(error);
}

export function isFailureAnnounced(error: unknown): boolean {
  return typeof error === 'object' && error !== null && announced.has(error);
}
