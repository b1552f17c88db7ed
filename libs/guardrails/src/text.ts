import { createHash } from 'node:crypto';
import unhomoglyph from 'unhomoglyph';
import { foldText } from '@agent/contracts';
import { INVISIBLE_CHARACTERS } from './personal-data';

const FORMAT_CHARACTERS = /\p{Cf}/gu;
const NON_ASCII_LETTER = /[^\p{ASCII}]/gu;
const ASCII = /^\p{ASCII}+$/u;
/** The skeleton per character, computed once: the confusables lookup is a large alternation. */
const SKELETONS = new Map<string, string>();

/**
 * Replaces letters of other scripts that look like Latin ones (Cyrillic "о", Greek "Ι", Cherokee "Ꭵ") by their
 * Latin prototype from Unicode's confusables table (UTS #39). ASCII is left alone: the table also maps Latin to
 * Latin ("m" → "rn"), which only makes sense for comparing two skeletons, not for matching words.
 */
function latinSkeleton(text: string): string {
  return text.replace(NON_ASCII_LETTER, (char) => {
    let latin = SKELETONS.get(char);
    if (latin === undefined) {
      const prototype = unhomoglyph(char);
      // The table's prototype of every I-shaped glyph is "l"; a capital one stood for an "I".
      latin = !ASCII.test(prototype)
        ? char
        : prototype === 'l' && char !== char.toLowerCase()
          ? 'I'
          : prototype;
      SKELETONS.set(char, latin);
    }
    return latin;
  });
}

/** Three or more single letters joined by one repeated separator ("i g n o r e", "i.g.n.o.r.e", "i-g-n"). */
const SPACED_LETTERS = /(?<![\p{L}\p{N}])\p{L}([ .\-_*·•|/])\p{L}(?:\1\p{L})+(?![\p{L}\p{N}])/gu;

/** Rejoins letters spelled out one by one; a wider gap (two spaces, " / ") still separates the words. */
function rejoinSpacedLetters(text: string): string {
  return text.replace(SPACED_LETTERS, (run) => run.replace(/[^\p{L}]/gu, ''));
}

/** Digits and symbols standing for letters inside a word ("1gn0r3", "@ll", "in$truction$"). */
const LEET: Record<string, string> = {
  '0': 'o',
  '1': 'i',
  '!': 'i',
  '3': 'e',
  '4': 'a',
  '@': 'a',
  '5': 's',
  $: 's',
  '7': 't',
};
const LEET_WORD = /[\p{L}\p{N}@$!]+/gu;

/**
 * Folds leetspeak in words that have at least one letter; `one` is what "1" becomes ("i" or "l"). A trailing
 * "!" is punctuation, not a letter.
 */
function foldLeet(text: string, one: 'i' | 'l'): string {
  return text.replace(LEET_WORD, (word) => {
    if (!/\p{L}/u.test(word)) return word;
    const body = word.replace(/!+$/, '');
    const folded = body.replace(/[0-9@$!]/g, (c) => (c === '1' ? one : (LEET[c] ?? c)));
    return folded + word.slice(body.length);
  });
}

/** Unicode tag characters (U+E0020–U+E007E): ASCII spelled invisibly, 0xE0000 above the letter it hides. */
const TAG_CHARACTERS = /[\u{e0020}-\u{e007e}]+/gu;
/** A tag run right after the black flag emoji spells a subdivision flag (🏴 + "gbsct"), not hidden text. */
const FLAG_TAGS = /\u{1f3f4}[\u{e0020}-\u{e007e}]+\u{e007f}?/gu;
/** Four or more variation selectors in a row: bytes hidden after a visible character, never a glyph variant. */
const SELECTOR_RUN = /[\ufe00-\ufe0f\u{e0100}-\u{e01ef}]{4,}/u;

/** The ASCII text hidden in tag characters (flags aside); empty when there is none. */
export function hiddenTagText(text: string): string {
  const runs = text.replace(FLAG_TAGS, '').match(TAG_CHARACTERS) ?? [];
  return runs
    .map((run) => [...run].map((c) => String.fromCharCode((c.codePointAt(0) ?? 0) - 0xe0000)).join(''))
    .join(' ')
    .trim();
}

/** Whether the text carries data no reader sees: ASCII in tag characters, or a run of variation selectors. */
export function hidesText(text: string): boolean {
  return hiddenTagText(text) !== '' || SELECTOR_RUN.test(text);
}

/** The text without invisible characters: what a model may be sent. */
export function withoutInvisible(text: string): string {
  return text.replace(INVISIBLE_CHARACTERS, '');
}

/** What the history keeps of a message withheld for its size: its length and SHA-256, not its text. */
export function withheldPlaceholder(text: string): string {
  const hash = createHash('sha256').update(text).digest('hex');
  return `[message withheld: ${text.length} characters, sha256 ${hash}]`;
}

const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;
const HEX_RUN = /(?:(?:\\x|0x|%)?[0-9a-fA-F]{2}[\s,:]?){8,}/g;
const HEX_PAIR = /[0-9a-fA-F]{2}/g;

/** Decoded bytes that read as text: valid UTF-8, at least 85% letters, digits, punctuation or spaces. */
function readable(bytes: Buffer): string | null {
  // A character cut at the end of a run decoded in part is not a sign of binary data.
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes).replace(/\ufffd$/, '');
  if (text.length < 8 || text.includes('\ufffd')) return null;
  const plain = text.match(/[\p{L}\p{N}\p{P}\s]/gu)?.length ?? 0;
  return plain / text.length >= 0.85 && /\p{L}{3}/u.test(text) ? text : null;
}

/** How much of one encoded run is decoded: an instruction sits at its start, a large blob (an image) is data. */
const MAX_DECODED_CHARS = 8192;

/** The text of every base64 or hex run that decodes to readable text. */
function decodedRuns(text: string): string[] {
  const decoded: string[] = [];
  for (const [run] of text.matchAll(BASE64_RUN)) {
    const head = run.slice(0, MAX_DECODED_CHARS).replace(/-/g, '+').replace(/_/g, '/');
    const found = readable(Buffer.from(head, 'base64'));
    if (found) decoded.push(found);
  }
  for (const [run] of text.matchAll(HEX_RUN)) {
    const pairs =
      run
        .slice(0, MAX_DECODED_CHARS)
        .replace(/\\x|0x|%/g, '')
        .match(HEX_PAIR) ?? [];
    const found = readable(Buffer.from(pairs.join(''), 'hex'));
    if (found) decoded.push(found);
  }
  return decoded;
}

function rot13(text: string): string {
  return text.replace(/[a-z]/gi, (c) => {
    const base = c <= 'Z' ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - base + 13) % 26) + base);
  });
}

const reversed = (text: string) => [...text].reverse().join('');

/**
 * What the text may hide from a reader but not from a model: text in tag characters, base64 and hex runs,
 * ROT13, and the text read backwards (whole, and word by word).
 */
function hiddenForms(text: string): string[] {
  const visible = withoutInvisible(text);
  const forms = [
    ...decodedRuns(visible),
    rot13(visible),
    reversed(visible),
    visible.replace(/\p{L}+/gu, reversed),
  ];
  const tags = hiddenTagText(text);
  return tags ? [tags, ...forms] : forms;
}

/**
 * The forms of the texts screened last: the input rails screen the same message one after the other (PINJ, TOX,
 * DLEX_IN), and the next turn's split check screens it again as the previous message. Bounded in count and in
 * the length of what it keeps, so a long document (a tool result, a passage) is never held.
 */
const RECENT_FORMS = new Map<string, ScreenForms>();
const RECENT_FORMS_SIZE = 256;
/** Of the text and its forms together: folding can make a text much longer (NFKC expands some characters 18×). */
const RECENT_FORMS_MAX_CHARS = 32768;

interface ScreenForms {
  /** The text as written and with its disguises undone. */
  revealed: readonly string[];
  /** Those, and what the text hides. */
  all: readonly string[];
}

function formsOf(text: string): ScreenForms {
  const known = RECENT_FORMS.get(text);
  if (known) return known;
  const plain = foldText(text);
  const undone = rejoinSpacedLetters(latinSkeleton(text.normalize('NFKC').replace(FORMAT_CHARACTERS, '')));
  const revealed = Object.freeze([
    ...new Set([plain, foldText(foldLeet(undone, 'i')), foldText(foldLeet(undone, 'l'))]),
  ]);
  const all = Object.freeze([...new Set([...revealed, ...hiddenForms(text).map(foldText)])]);
  const forms = { revealed, all };
  if (all.reduce((chars, form) => chars + form.length, text.length) <= RECENT_FORMS_MAX_CHARS) {
    const oldest = RECENT_FORMS.size >= RECENT_FORMS_SIZE ? RECENT_FORMS.keys().next() : null;
    if (oldest && !oldest.done) RECENT_FORMS.delete(oldest.value);
    RECENT_FORMS.set(text, forms);
  }
  return forms;
}

/**
 * The forms a deterministic screen tests, all folded (see `foldText`): the text as written; the text with its
 * disguises undone — NFKC and invisible format characters first, then confusable letters to their Latin
 * skeleton, letters spelled out with spaces or dots rejoined and leetspeak folded ("1" read as "i" and as "l");
 * and what it hides (`hiddenForms`: tag characters, base64 and hex, ROT13, reversed text). A pattern that
 * matches any form matches the text.
 */
export function screenForms(text: string): readonly string[] {
  return formsOf(text).all;
}

/**
 * The text as written and with its disguises undone, without what it may hide: for a pattern so short that the
 * text read backwards or in ROT13 would find it in ordinary words ("pdf" read backwards is an insult's
 * abbreviation).
 */
export function revealedForms(text: string): readonly string[] {
  return formsOf(text).revealed;
}

/** Alternatives of a pattern, as a non-capturing group. */
export const alternatives = (...words: string[]): string => `(?:${words.join('|')})`;

/** The first pattern that matches one of the texts (e.g. the `screenForms` of a message), or null. */
export function firstMatch(
  texts: string | readonly string[],
  patterns: readonly RegExp[],
): { pattern: RegExp; match: string } | null {
  for (const text of typeof texts === 'string' ? [texts] : texts) {
    for (const pattern of patterns) {
      const found = pattern.exec(text);
      if (found) return { pattern, match: found[0] };
    }
  }
  return null;
}

/**
 * Compiles an operator-written pattern (guardrails.yaml, judges.yaml): case-insensitive and Unicode-aware.
 * Returns the error message instead of throwing so the schema can report it with its key path.
 */
export function compileUserPattern(source: string): RegExp | string {
  try {
    return new RegExp(source, 'iu');
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Matches the raw text or its folded form, so operators need not write both spellings. */
export function matchesEither(pattern: RegExp, text: string): boolean {
  return pattern.test(text) || pattern.test(foldText(text));
}

/** Splits an answer into sentences (., !, ?, ; or line breaks), keeping the terminator. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * `text` cut to at most `max` characters: at the last sentence end that keeps at least half of the limit, else
 * at the last word, marked with "…".
 */
export function cutAtSentence(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max);
  const ends = [...head.matchAll(/[.!?…](?=\s|$)/g)];
  const end = ends.length > 0 ? ends[ends.length - 1].index + 1 : 0;
  if (end >= max / 2) return head.slice(0, end);
  const space = head.lastIndexOf(' ', max - 2);
  return `${head.slice(0, space >= max / 2 ? space : max - 1).trimEnd()}…`;
}

/** Rough token estimate used by INPUT_SIZE (the reference's chars/4). */
export function estimateTokens(text: string, charsPerToken: number): number {
  return Math.ceil(text.length / charsPerToken);
}
