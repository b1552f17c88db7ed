/** Deterministic detectors of Brazilian and international personal data (MSK, DLEX_OUT). */

export const PII_TYPES = ['card', 'cnpj', 'cpf', 'email', 'phone'] as const;
export type PiiType = (typeof PII_TYPES)[number];

export interface PiiMatch {
  type: PiiType;
  value: string;
  start: number;
  end: number;
}

const digitsOf = (value: string) => value.replace(/\D/g, '');

export function isValidCpf(value: string): boolean {
  const d = digitsOf(value);
  if (d.length !== 11 || /^(\d)\1{10}$/.test(d)) return false;
  const check = (length: number) => {
    let sum = 0;
    for (let i = 0; i < length; i++) sum += Number(d[i]) * (length + 1 - i);
    const rest = (sum * 10) % 11;
    return rest === 10 ? 0 : rest;
  };
  return check(9) === Number(d[9]) && check(10) === Number(d[10]);
}

export function isValidCnpj(value: string): boolean {
  const d = digitsOf(value);
  if (d.length !== 14 || /^(\d)\1{13}$/.test(d)) return false;
  const check = (length: number) => {
    const weights =
      length === 12 ? [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2] : [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
    const sum = weights.reduce((acc, w, i) => acc + w * Number(d[i]), 0);
    const rest = sum % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  return check(12) === Number(d[12]) && check(13) === Number(d[13]);
}

export function passesLuhn(value: string): boolean {
  const d = digitsOf(value);
  if (d.length < 13 || d.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < d.length; i++) {
    let n = Number(d[d.length - 1 - i]);
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  return sum % 10 === 0;
}

interface Detector {
  type: PiiType;
  pattern: RegExp;
  /** Extra validation so order numbers and amounts are not taken for documents. */
  accept: (value: string) => boolean;
}

/**
 * Checked in this order, and a later detector never matches inside an earlier match: card numbers are
 * long digit runs that would otherwise be split into CPF or phone look-alikes.
 */
const DETECTORS: Detector[] = [
  {
    type: 'card',
    pattern: /(?<!\d)(?:\d{4}[ -]?){3}\d{1,7}(?!\d)/g,
    accept: passesLuhn,
  },
  {
    type: 'cnpj',
    pattern: /(?<!\d)(?:\d{2}\.\d{3}\.\d{3}\/\d{4}-\d{2}|\d{14})(?!\d)/g,
    // A formatted CNPJ is masked even with wrong check digits: the format alone shows what it is.
    accept: (v) => /[./-]/.test(v) || isValidCnpj(v),
  },
  {
    type: 'cpf',
    pattern: /(?<!\d)(?:\d{3}\.\d{3}\.\d{3}-\d{2}|\d{11})(?!\d)/g,
    accept: (v) => /[.-]/.test(v) || isValidCpf(v),
  },
  {
    type: 'email',
    pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g,
    accept: () => true,
  },
  {
    // Needs a formatting cue (+country code, parenthesised area code or a separator): bare 10-11 digit
    // runs are more often order or account numbers, which the agent must keep seeing.
    type: 'phone',
    pattern:
      /(?<![\d\w])(?:\+\d{1,3}[ -]?\(?\d{2,3}\)?[ -]?\d{3,5}[ -]?\d{4}|\(\d{2,3}\) ?9?\d{4}[ -]?\d{4}|\d{2}[ -]9?\d{4}-\d{4}|\d{3}-\d{3}-\d{4})(?!\d)/g,
    accept: () => true,
  },
];

/** Every personal-data match of the requested types, non-overlapping, in text order. */
export function findPii(text: string, types: readonly PiiType[] = PII_TYPES): PiiMatch[] {
  const found: PiiMatch[] = [];
  const overlaps = (start: number, end: number) => found.some((m) => start < m.end && end > m.start);
  for (const detector of DETECTORS) {
    if (!types.includes(detector.type)) continue;
    for (const match of text.matchAll(detector.pattern)) {
      const start = match.index;
      const end = start + match[0].length;
      if (overlaps(start, end) || !detector.accept(match[0])) continue;
      found.push({ type: detector.type, value: match[0], start, end });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

/** Replaces each match using `replacement(match)`. */
export function replacePii(
  text: string,
  matches: readonly PiiMatch[],
  replacement: (m: PiiMatch) => string,
): string {
  let out = '';
  let cursor = 0;
  for (const match of [...matches].sort((a, b) => a.start - b.start)) {
    out += text.slice(cursor, match.start) + replacement(match);
    cursor = match.end;
  }
  return out + text.slice(cursor);
}

/** `[CPF]`, `[EMAIL]`, ... from a `[{type}]`-style template. */
export function placeholder(template: string, type: PiiType): string {
  return template.replace('{type}', type.toUpperCase());
}

/** Keeps the last four digits of a card number: enough for the customer to recognise it. */
export function maskCardKeepingLast4(value: string): string {
  const digits = digitsOf(value);
  return `**** **** **** ${digits.slice(-4)}`;
}

export function digitsOnly(value: string): string {
  return digitsOf(value);
}
