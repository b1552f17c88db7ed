/** Zero-width and other invisible format characters (Unicode category Cf): never part of a word. */
const FORMAT_CHARACTERS = /\p{Cf}/gu;
/** Combining marks left by the compatibility decomposition: accents, cedillas, tildes, umlauts. */
const COMBINING_MARKS = /\p{M}/gu;

/**
 * The one text fold of the runtime, used wherever text is compared rather than shown (routing keywords,
 * guardrail screens, judge heuristics): compatibility forms unfolded ("ｆｕｌｌ", "2ª" → "full", "2a"), accents
 * and case dropped ("Cobrança" → "cobranca", "DEVOLUÇÃO" → "devolucao"), invisible format characters removed
 * and whitespace collapsed, so one pattern covers every spelling of a word in pt, en, es and de.
 */
export function foldText(text: string): string {
  return text
    .normalize('NFKD')
    .replace(FORMAT_CHARACTERS, '')
    .replace(COMBINING_MARKS, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}
