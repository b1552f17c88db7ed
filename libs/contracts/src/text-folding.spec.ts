import { foldText } from './text-folding';

describe('foldText', () => {
  it.each([
    ['Cobrança DEVOLUÇÃO', 'cobranca devolucao'],
    ['Garantía, Señal', 'garantia, senal'],
    ['Größe Übersicht', 'große ubersicht'],
    ['2ª via', '2a via'],
    ['ｆｕｌｌ ｗｉｄｔｈ', 'full width'],
    ['zero\u200bwidth\u2060joined', 'zerowidthjoined'],
    ['  many \t\n spaces  ', 'many spaces'],
  ])('%p folds to %p', (text, folded) => {
    expect(foldText(text)).toBe(folded);
  });
});
