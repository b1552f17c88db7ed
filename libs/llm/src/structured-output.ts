/**
 * Tolerant extraction of one JSON object from a model answer: accepts a ``` fence and prose around a single
 * balanced object. Returns null when there is no parsable object; validation is the caller's job.
 */
export function parseJsonObject(text: string | null | undefined): Record<string, unknown> | null {
  if (typeof text !== 'string') return null;
  const trimmed = text.trim();
  const direct = tryParse(trimmed);
  if (direct) return direct;
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(trimmed);
  if (fenced) {
    const inner = tryParse(fenced[1].trim());
    if (inner) return inner;
  }
  const start = trimmed.indexOf('{');
  if (start === -1) return null;
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = start; i < trimmed.length; i++) {
    const ch = trimmed[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}') {
      depth--;
      if (depth === 0) return tryParse(trimmed.slice(start, i + 1));
    }
  }
  return null;
}

function tryParse(candidate: string): Record<string, unknown> | null {
  if (!candidate.startsWith('{')) return null;
  try {
    const value: unknown = JSON.parse(candidate);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
