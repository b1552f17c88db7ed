/**
 * The card-number formats docs/guardrails.md lists, each as a customer could type it: what the unit tests mask
 * and the end-to-end test sends through to the database, the webhooks and NATS. `pan` is the number in ASCII
 * digits, `masked` what the default policy leaves of it (first six and last four digits).
 */
export interface CardFormat {
  name: string;
  text: string;
  pan: string;
  masked: string;
}

const VISA = '4111111111111111';
const spaced = (groups: string[], separator: string) => groups.join(separator);
const inScript = (digits: string, zero: number) =>
  [...digits].map((d) => (/\d/.test(d) ? String.fromCodePoint(zero + Number(d)) : d)).join('');

export const CARD_FORMATS: readonly CardFormat[] = [
  {
    name: 'Visa, groups of 4 with spaces',
    text: '4111 1111 1111 1111',
    pan: VISA,
    masked: '411111******1111',
  },
  { name: 'Visa, dashes', text: '4111-1111-1111-1111', pan: VISA, masked: '411111******1111' },
  { name: 'Visa, no separator', text: VISA, pan: VISA, masked: '411111******1111' },
  {
    name: 'Visa, 19 digits',
    text: '4111 1111 1111 1111 003',
    pan: '4111111111111111003',
    masked: '411111*********1003',
  },
  { name: 'Mastercard', text: '5555 5555 5555 4444', pan: '5555555555554444', masked: '555555******4444' },
  {
    name: 'Mastercard, 2-series',
    text: '2223 0031 2200 3222',
    pan: '2223003122003222',
    masked: '222300******3222',
  },
  {
    name: 'Amex 4-6-5, spaces',
    text: '3782 822463 10005',
    pan: '378282246310005',
    masked: '378282*****0005',
  },
  {
    name: 'Amex 4-6-5, dashes',
    text: '3782-822463-10005',
    pan: '378282246310005',
    masked: '378282*****0005',
  },
  { name: 'Amex, no separator', text: '378282246310005', pan: '378282246310005', masked: '378282*****0005' },
  { name: 'Diners 4-6-4', text: '3056 930902 5904', pan: '30569309025904', masked: '305693****5904' },
  { name: 'Discover', text: '6011 1111 1111 1117', pan: '6011111111111117', masked: '601111******1117' },
  { name: 'JCB', text: '3530 1113 3330 0000', pan: '3530111333300000', masked: '353011******0000' },
  { name: 'Elo', text: '6362 9700 0045 7013', pan: '6362970000457013', masked: '636297******7013' },
  { name: 'Hipercard', text: '6062 8288 8866 6688', pan: '6062828888666688', masked: '606282******6688' },
  { name: 'groups separated by dots', text: '4111.1111.1111.1111', pan: VISA, masked: '411111******1111' },
  { name: 'groups separated by slashes', text: '4111/1111/1111/1111', pan: VISA, masked: '411111******1111' },
  {
    name: 'groups separated by " - "',
    text: '4111 - 1111 - 1111 - 1111',
    pan: VISA,
    masked: '411111******1111',
  },
  { name: 'en dashes', text: '4111–1111–1111–1111', pan: VISA, masked: '411111******1111' },
  {
    name: 'non-breaking spaces',
    text: spaced(['4111', '1111', '1111', '1111'], '\u00a0'),
    pan: VISA,
    masked: '411111******1111',
  },
  {
    name: 'narrow non-breaking spaces',
    text: spaced(['5555', '5555', '5555', '4444'], '\u202f'),
    pan: '5555555555554444',
    masked: '555555******4444',
  },
  {
    name: 'zero-width spaces between groups',
    text: spaced(['4111', '1111', '1111', '1111'], '\u200b'),
    pan: VISA,
    masked: '411111******1111',
  },
  {
    name: 'a zero-width joiner between every digit',
    text: [...VISA].join('\u200d'),
    pan: VISA,
    masked: '411111******1111',
  },
  {
    name: 'soft hyphens',
    text: spaced(['4111', '1111', '1111', '1111'], '\u00ad'),
    pan: VISA,
    masked: '411111******1111',
  },
  { name: 'single digits spaced out', text: [...VISA].join(' '), pan: VISA, masked: '411111******1111' },
  {
    name: 'full-width digits',
    text: inScript('4111 1111 1111 1111', 0xff10),
    pan: VISA,
    masked: '411111******1111',
  },
  {
    name: 'Arabic-Indic digits',
    text: inScript('4111 1111 1111 1111', 0x660),
    pan: VISA,
    masked: '411111******1111',
  },
  { name: 'Persian digits', text: inScript(VISA, 0x6f0), pan: VISA, masked: '411111******1111' },
  {
    name: 'Devanagari digits',
    text: inScript('5555 5555 5555 4444', 0x966),
    pan: '5555555555554444',
    masked: '555555******4444',
  },
];

/** The decimal digits of a text in ASCII, whatever their script, everything else dropped. */
export function asciiDigitsOf(text: string): string {
  let digits = '';
  for (const char of text) {
    if (/\d/.test(char)) digits += char;
    else if (/\p{Nd}/u.test(char)) {
      let zero = char.codePointAt(0) ?? 0;
      while (/\p{Nd}/u.test(String.fromCodePoint(zero - 1))) zero--;
      digits += String(((char.codePointAt(0) ?? 0) - zero) % 10);
    }
  }
  return digits;
}
