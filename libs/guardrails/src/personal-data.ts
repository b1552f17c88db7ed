import creditCardType from 'credit-card-type';
import { CountryCode, findPhoneNumbersInText, isSupportedCountry } from 'libphonenumber-js';

/**
 * Deterministic detectors of personal data, built like Presidio's recognisers: a pattern finds candidates, a
 * checksum validates them (Luhn and issuer range, CPF/CNPJ check digits, IBAN mod 97), context words raise the
 * score of weak candidates, and only those scoring at least DETECTION_THRESHOLD are reported.
 *
 * Every detector reads the text normalised first: decimal digits of every script become ASCII, and invisible
 * characters (format characters, variation selectors) are ignored, so "４１１１", "٤١١١" or "4\u200b111" are
 * the digits they show. Matches are reported on the original text, spanning what they cover there.
 */

export const PERSONAL_DATA_TYPES = ['card', 'iban', 'cnpj', 'cpf', 'email', 'phone'] as const;
export type PersonalDataType = (typeof PERSONAL_DATA_TYPES)[number];

export interface PersonalDataMatch {
  type: PersonalDataType;
  /** The matched text as written. */
  value: string;
  /** What identifies it: its ASCII digits (IBAN: upper-case letters and digits; e-mail: lower-cased). */
  normalized: string;
  start: number;
  end: number;
  score: number;
}

export interface DetectionOptions {
  types?: readonly PersonalDataType[];
  /** How a phone number written without a country code is read (ISO 3166 alpha-2). */
  phoneRegion?: string;
}

/** The score a candidate needs to be reported. */
export const DETECTION_THRESHOLD = 0.5;
/** What a context word near a weak candidate adds to its score. */
const CONTEXT_BOOST = 0.35;
/** How far before a candidate a context word counts, in characters. */
const CONTEXT_WINDOW = 40;

/** Format characters (zero-width, tags, bidi), variation selectors and the grapheme joiner: never visible. */
export const INVISIBLE_CHARACTERS = /[\p{Cf}\u034f\ufe00-\ufe0f\u{e0100}-\u{e01ef}]/gu;
const INVISIBLE = /^[\p{Cf}\u034f\ufe00-\ufe0f\u{e0100}-\u{e01ef}]$/u;
const DECIMAL_DIGIT = /^\p{Nd}$/u;

/** The ASCII digit of every decimal digit met so far, by code point. */
const DIGIT_VALUES = new Map<number, string>();

/**
 * The ASCII digit a decimal digit of any script stands for. Unicode encodes every script's decimal digits in
 * contiguous runs of ten from zero, so the value is the distance from the start of the run, modulo ten.
 */
function asciiDigit(char: string): string | null {
  const codePoint = char.codePointAt(0) ?? 0;
  if (codePoint < 0x80) return codePoint >= 0x30 && codePoint <= 0x39 ? char : null;
  const known = DIGIT_VALUES.get(codePoint);
  if (known !== undefined) return known;
  if (!DECIMAL_DIGIT.test(char)) return null;
  let start = codePoint;
  while (DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--;
  const value = String((codePoint - start) % 10);
  DIGIT_VALUES.set(codePoint, value);
  return value;
}

/** The text as the detectors read it, with where each of its characters came from in the original. */
interface NormalizedText {
  text: string;
  /** For each UTF-16 unit of `text`: the start and the end of its source character in the original. */
  from: number[];
  to: number[];
}

function normalize(original: string): NormalizedText {
  let text = '';
  const from: number[] = [];
  const to: number[] = [];
  let index = 0;
  for (const char of original) {
    const end = index + char.length;
    if (!INVISIBLE.test(char)) {
      const digit = asciiDigit(char);
      const written = digit ?? char;
      text += written;
      for (let unit = 0; unit < written.length; unit++) {
        from.push(index);
        to.push(end);
      }
    }
    index = end;
  }
  return { text, from, to };
}

/** Mod-10 check of card numbers. */
export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let n = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  return sum % 10 === 0;
}

/** A known issuer range (Braintree's maintained table) that issues numbers of this length. */
function hasCardIssuer(digits: string): boolean {
  return creditCardType(digits).some((card) => card.lengths.includes(digits.length));
}

export function isValidCpf(value: string): boolean {
  const d = value.replace(/\D/g, '');
  if (d.length !== 11 || /^(\d)\1{10}$/.test(d)) return false;
  const check = (length: number) => {
    let sum = 0;
    for (let i = 0; i < length; i++) sum += Number(d[i]) * (length + 1 - i);
    const rest = (sum * 10) % 11;
    return rest === 10 ? 0 : rest;
  };
  return check(9) === Number(d[9]) && check(10) === Number(d[10]);
}

/** CNPJ check digits; the first twelve characters may be letters (the alphanumeric CNPJ), valued as code − 48. */
export function isValidCnpj(value: string): boolean {
  const c = value.replace(/[^0-9A-Za-z]/g, '').toUpperCase();
  if (!/^[0-9A-Z]{12}\d{2}$/.test(c) || /^(\d)\1{13}$/.test(c)) return false;
  const check = (length: number) => {
    let sum = 0;
    for (let i = 0; i < length; i++) sum += (c.charCodeAt(i) - 48) * (((length - 1 - i) % 8) + 2);
    const rest = sum % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  return check(12) === Number(c[12]) && check(13) === Number(c[13]);
}

/** IBAN lengths by country (the IBAN registry). */
const IBAN_LENGTHS: Record<string, number> = Object.fromEntries(
  (
    'AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 DO28 EE20 ' +
    'EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 ' +
    'KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 ' +
    'PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 ' +
    'VA22 VG24 XK20'
  )
    .split(' ')
    .map((entry) => [entry.slice(0, 2), Number(entry.slice(2))]),
);

/** ISO 13616 check: the country and check digits moved to the end, letters as 10–35, the number mod 97 is 1. */
export function isValidIban(value: string): boolean {
  const iban = value.replace(/[\s-]/g, '').toUpperCase();
  if (IBAN_LENGTHS[iban.slice(0, 2)] !== iban.length || !/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban)) return false;
  let rest = 0;
  for (const char of iban.slice(4) + iban.slice(0, 4)) {
    const n = char >= 'A' ? char.charCodeAt(0) - 55 : Number(char);
    rest = (rest * (n > 9 ? 100 : 10) + n) % 97;
  }
  return rest === 1;
}

/** A candidate found in the normalised text, before it is mapped back to the original. */
interface Candidate {
  start: number;
  end: number;
  normalized: string;
  score: number;
}

/** Characters that may separate the digit groups of one number: spaces of any width, dashes, dots, slashes. */
const GROUP_SEPARATOR = '[\\s\\p{Pd}\\u2212./\\\\_|·•\\uff0e\\uff0f\\uff3f]';
/** Digit groups joined by at most three separator characters ("4111 1111", "3782-822463", "4 1 1 1"). */
const DIGIT_RUN = new RegExp(`\\d+(?:${GROUP_SEPARATOR}{1,3}\\d+)*`, 'gu');
const DIGIT_GROUP = /\d+/g;
/**
 * Brazilian payment slips, read whole: a boleto's typed line (47 digits in five fields) and a utility bill's
 * (48 digits in four blocks). Their digits would otherwise hold card look-alikes the customer needs kept.
 */
const PAYMENT_SLIP =
  /^(?:\d{5}\.?\d{5}\s?\d{5}\.?\d{6}\s?\d{5}\.?\d{6}\s?\d\s?\d{14}|(?:\d{11}[\s-]?\d\s?){3}\d{11}[\s-]?\d)$/;

/**
 * Card numbers as a PCI scanner finds them: within a run of digit groups, the longest span of whole groups with
 * 12 to 19 digits, a valid Luhn check and a known issuer range of that length; any grouping. A payment slip's
 * line is not searched.
 */
function findCards(text: string): Candidate[] {
  const found: Candidate[] = [];
  for (const run of text.matchAll(DIGIT_RUN)) {
    if (PAYMENT_SLIP.test(run[0])) continue;
    const groups = [...run[0].matchAll(DIGIT_GROUP)].map((g) => ({
      digits: g[0],
      start: run.index + g.index,
      end: run.index + g.index + g[0].length,
    }));
    let first = 0;
    while (first < groups.length) {
      let best: Candidate | null = null;
      let digits = '';
      let last = first;
      for (let g = first; g < groups.length && digits.length + groups[g].digits.length <= 19; g++) {
        digits += groups[g].digits;
        if (digits.length >= 12 && passesLuhn(digits) && hasCardIssuer(digits)) {
          best = { start: groups[first].start, end: groups[g].end, normalized: digits, score: 1 };
          last = g;
        }
      }
      if (best) found.push(best);
      first = best ? last + 1 : first + 1;
    }
  }
  return found;
}

/** IBANs: country, check digits and the country's length of letters and digits, in groups or not; mod 97. */
function findIbans(text: string): Candidate[] {
  const found: Candidate[] = [];
  for (const head of text.matchAll(/(?<![\p{L}\p{N}])[A-Za-z]{2}\d{2}/gu)) {
    const length = IBAN_LENGTHS[head[0].slice(0, 2).toUpperCase()];
    if (length === undefined) continue;
    let compact = head[0].toUpperCase();
    let end = head.index + head[0].length;
    while (compact.length < length && end < text.length) {
      const skip = text[end] === ' ' || text[end] === '-' ? 1 : 0;
      const next = text[end + skip];
      if (next === undefined || !/[A-Za-z0-9]/.test(next)) break;
      compact += next.toUpperCase();
      end += skip + 1;
    }
    if (compact.length !== length || /[\p{L}\p{N}]/u.test(text[end] ?? '')) continue;
    if (isValidIban(compact)) found.push({ start: head.index, end, normalized: compact, score: 1 });
  }
  return found;
}

/** Whether a context word of `words` ends within CONTEXT_WINDOW characters before `start` (folded, any case). */
function hasContext(text: string, start: number, words: RegExp): boolean {
  const before = text
    .slice(Math.max(0, start - CONTEXT_WINDOW), start)
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase();
  return words.test(before);
}

/**
 * A document found by its pattern: valid check digits score 1, a formatted number with wrong check digits
 * 0.4 (a typo of a real one), raised by a context word ("CPF") to 0.75.
 */
function findDocuments(
  text: string,
  pattern: RegExp,
  isValid: (value: string) => boolean,
  context: RegExp,
): Candidate[] {
  const found: Candidate[] = [];
  for (const match of text.matchAll(pattern)) {
    const value = match[0];
    const formatted = /[./-]/.test(value);
    let score = isValid(value) ? 1 : formatted ? 0.4 : 0;
    if (score < DETECTION_THRESHOLD && score > 0 && hasContext(text, match.index, context)) {
      score += CONTEXT_BOOST;
    }
    const normalized = value.replace(/[^0-9A-Za-z]/g, '').toUpperCase();
    found.push({ start: match.index, end: match.index + value.length, normalized, score });
  }
  return found;
}

const CPF_PATTERN = /(?<![\p{L}\p{N}])\d{3}(\.?)\d{3}\1\d{3}-?\d{2}(?![\p{L}\p{N}])/gu;
const CNPJ_PATTERN =
  /(?<![\p{L}\p{N}])(?:\d{2}(\.?)\d{3}\1\d{3}\/?\d{4}-?\d{2}|[0-9A-Z]{2}\.[0-9A-Z]{3}\.[0-9A-Z]{3}\/[0-9A-Z]{4}-\d{2})(?![\p{L}\p{N}])/gu;
const EMAIL_PATTERN = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/gu;

/** Words that say a number is a phone number, in the six languages the runtime screens. */
const PHONE_CONTEXT =
  /\b(tel|telefone|telefono|telefon|telephone|fone|phone|celular|cel|movil|mobile|cellulare|cellphone|handy|portable|whatsapp|whats|zap|ligar|ligue|liga|llamar|llame|call|appeler|chiamare|anrufen|contato|contacto|contact|contatto|kontakt|numero|number|nummer)\b/;
const CPF_CONTEXT = /\bcpf\b/;
const CNPJ_CONTEXT = /\bcnpj\b/;

/**
 * Phone numbers through libphonenumber (its per-country numbering plans). Like Presidio's phone recogniser the
 * match alone is weak: an international (+55 …) or parenthesised ((11) …) number scores 0.7; a bare national
 * one ("11 3456-7890", also what an order or protocol number can look like) 0.4, raised by a context word.
 */
function findPhones(text: string, region: CountryCode): Candidate[] {
  return findPhoneNumbersInText(text, region).map((match) => {
    const value = text.slice(match.startsAt, match.endsAt);
    let score = /^\+|\(/.test(value) ? 0.7 : 0.4;
    if (score < DETECTION_THRESHOLD && hasContext(text, match.startsAt, PHONE_CONTEXT)) {
      score += CONTEXT_BOOST;
    }
    return { start: match.startsAt, end: match.endsAt, normalized: match.number.number, score };
  });
}

const DETECTORS: Record<PersonalDataType, (text: string, region: CountryCode) => Candidate[]> = {
  card: findCards,
  iban: findIbans,
  cnpj: (text) => findDocuments(text, CNPJ_PATTERN, isValidCnpj, CNPJ_CONTEXT),
  cpf: (text) => findDocuments(text, CPF_PATTERN, isValidCpf, CPF_CONTEXT),
  email: (text) =>
    [...text.matchAll(EMAIL_PATTERN)].map((m) => ({
      start: m.index,
      end: m.index + m[0].length,
      normalized: m[0].toLowerCase(),
      score: 1,
    })),
  phone: findPhones,
};

/** A region libphonenumber knows, for the configuration schema. */
export function isPhoneRegion(region: string): region is CountryCode {
  return isSupportedCountry(region);
}

/**
 * Every personal-data item of the requested types, in text order, never overlapping: types are tried in
 * PERSONAL_DATA_TYPES order (cards first: their long digit runs would otherwise split into other look-alikes)
 * and a later type never matches inside an earlier match.
 */
export function findPersonalData(text: string, options: DetectionOptions = {}): PersonalDataMatch[] {
  const types = options.types ?? PERSONAL_DATA_TYPES;
  if (types.length === 0 || !/[\p{Nd}@]/u.test(text)) return [];
  const region = options.phoneRegion && isPhoneRegion(options.phoneRegion) ? options.phoneRegion : 'BR';
  const normalized = normalize(text);
  const found: PersonalDataMatch[] = [];
  const overlaps = (start: number, end: number) => found.some((m) => start < m.end && end > m.start);
  for (const type of PERSONAL_DATA_TYPES) {
    if (!types.includes(type)) continue;
    for (const candidate of DETECTORS[type](normalized.text, region)) {
      if (candidate.score < DETECTION_THRESHOLD) continue;
      const start = normalized.from[candidate.start];
      const end = normalized.to[candidate.end - 1];
      if (overlaps(start, end)) continue;
      found.push({
        type,
        value: text.slice(start, end),
        normalized: candidate.normalized,
        start,
        end,
        score: candidate.score,
      });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

/** Replaces each match with `replacement(match)`. */
export function replacePersonalData(
  text: string,
  matches: readonly PersonalDataMatch[],
  replacement: (match: PersonalDataMatch) => string,
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
export function placeholder(template: string, type: PersonalDataType): string {
  return template.replace('{type}', type.toUpperCase());
}

const stars = (count: number) => '*'.repeat(Math.max(0, count));

/**
 * The partly hidden form of an item, enough for the customer to recognise it and for nobody to use it: a card
 * keeps its first six and last four digits (what PCI DSS allows to be shown), a CPF or CNPJ its check digits,
 * a phone number its last four digits, an IBAN its country, check digits and last four, an e-mail address its
 * first letter and its domain.
 */
export function partialMask(match: PersonalDataMatch): string {
  const n = match.normalized;
  switch (match.type) {
    case 'card':
      return `${n.slice(0, 6)}${stars(n.length - 10)}${n.slice(-4)}`;
    case 'cpf':
      return `***.***.***-${n.slice(-2)}`;
    case 'cnpj':
      return `**.***.***/****-${n.slice(-2)}`;
    case 'iban':
      return `${n.slice(0, 4)}${stars(n.length - 8)}${n.slice(-4)}`;
    case 'phone':
      return `${stars(n.replace(/\D/g, '').length - 4)}${n.slice(-4)}`;
    case 'email': {
      const at = match.value.lastIndexOf('@');
      return `${match.value.slice(0, 1)}***${match.value.slice(at)}`;
    }
  }
}
