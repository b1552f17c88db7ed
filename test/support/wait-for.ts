/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs` naming `what`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30000,
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Polls `condition` until it holds, or fails after `timeoutMs` naming `what`. */
export async function waitUntil(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 30000,
  intervalMs = 20,
): Promise<void> {
  await eventually(what, async () => ((await condition()) ? true : undefined), timeoutMs, intervalMs);
}

/** Waits until the clock has moved past `instant`, so what is written next is stamped later than it. */
export async function clockPast(instant: Date): Promise<void> {
  await waitUntil(
    `the clock to pass ${instant.toISOString()}`,
    () => Date.now() > instant.getTime() + 1,
    5000,
    1,
  );
}
