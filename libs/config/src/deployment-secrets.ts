/**
 * Variables whose value is a secret: their name says so (`LLM_API_KEY`, `ADMIN_API_KEYS`, `*_SECRET`,
 * `*_TOKEN`, `*_PASSWORD`), whatever the runtime does with them; a webhook's `secret_env` is named like one.
 */
const SECRET_NAME = /SECRET|PASSWORD|(^|_)(API_?KEYS?|KEYS?|TOKENS?|PASS|CREDENTIALS?)$/;
/** A shorter value would match ordinary words of an answer. */
export const MIN_MATCHED_SECRET_LENGTH = 12;

/**
 * The deployment's secret values, for the output rails to refuse an answer that repeats one: every value of a
 * secret-named variable (each key of a `tenant:key,…` list on its own too) and the password of every URL
 * variable (`DATABASE_URL`, `REDIS_URL`, …), at least MIN_MATCHED_SECRET_LENGTH characters long.
 */
export function deploymentSecrets(raw: Record<string, string | undefined> = process.env): string[] {
  const secrets = new Set<string>();
  for (const [name, value] of Object.entries(raw)) {
    if (!value) continue;
    if (/URL$/.test(name)) {
      try {
        const password = decodeURIComponent(new URL(value).password);
        if (password) secrets.add(password);
      } catch {
        // not a URL: nothing to take from it
      }
    }
    if (!SECRET_NAME.test(name)) continue;
    for (const entry of value.split(',').map((item) => item.trim())) {
      secrets.add(entry);
      const separator = entry.indexOf(':');
      if (separator > 0) secrets.add(entry.slice(separator + 1));
    }
  }
  return [...secrets].filter((secret) => secret.length >= MIN_MATCHED_SECRET_LENGTH);
}
