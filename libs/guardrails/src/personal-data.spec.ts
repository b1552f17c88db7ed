import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { CARD_FORMATS } from '../../../test/support/card-formats';
import {
  findPersonalData,
  isValidCnpj,
  isValidIban,
  partialMask,
  replacePersonalData,
} from './personal-data';
import { applyPolicy, personalDataSchema, policyFor } from './personal-data-policy';

const maskAll = (text: string) =>
  replacePersonalData(text, findPersonalData(text), (m) => `<${m.type}:${partialMask(m)}>`);

describe('card numbers', () => {
  it.each(CARD_FORMATS.map((f) => [f.name, f]))('finds and masks %s', (_name, format) => {
    const text = `Cobraram duas vezes no cartão ${format.text}, pode ver?`;
    const [card, ...others] = findPersonalData(text);
    expect(others).toEqual([]);
    expect(card).toMatchObject({ type: 'card', normalized: format.pan, value: format.text });
    expect(maskAll(text)).toBe(`Cobraram duas vezes no cartão <card:${format.masked}>, pode ver?`);
  });

  it('are the formats docs/guardrails.md lists, with what each becomes', () => {
    const docs = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'guardrails.md'), 'utf8');
    for (const format of CARD_FORMATS) {
      expect(docs).toMatch(
        new RegExp(
          `\\| ${format.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +\\| .+ \\| \`${format.masked.replace(/\*/g, '\\*')}\` +\\|`,
        ),
      );
    }
  });

  it('leaves order numbers, amounts, dates, protocols and payment slips alone', () => {
    for (const text of [
      'Pedido 123456789, valor R$ 1.234,56, order 98765432101, em 12/05/2024',
      'protocolo 2024123456789012',
      // A number with a valid Luhn check but no card issuer, and a card-like number that fails Luhn.
      'conta 9999999999999995 e 4111 1111 1111 1112',
      'boleto 23793.38128 60082.677133 79000.063305 9 84410000012345',
      'conta de luz 83640000001-1 33120138000-8 12345678901-2 12345678901-3',
    ]) {
      expect(findPersonalData(text, { types: ['card'] })).toEqual([]);
    }
  });

  it('finds every Luhn-valid Visa number whatever its separators and digit script', () => {
    const digitScripts = [0x30, 0xff10, 0x660, 0x6f0, 0x966, 0x9e6];
    const separators = ['', ' ', '-', '.', '/', '\u00a0', '\u200b', ' - '];
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 14, maxLength: 14 }),
        fc.constantFrom(...digitScripts),
        fc.constantFrom(...separators),
        (middle, zero, separator) => {
          const body = [4, ...middle];
          let sum = 0;
          body.forEach((d, i) => {
            const n = (body.length - i) % 2 === 1 ? d * 2 : d;
            sum += n > 9 ? n - 9 : n;
          });
          const pan = [...body, (10 - (sum % 10)) % 10].join('');
          const written = (pan.match(/\d{4}/g) ?? [])
            .map((group) => [...group].map((d) => String.fromCodePoint(zero + Number(d))).join(''))
            .join(separator);
          const found = findPersonalData(`meu cartão é ${written} ok`);
          return found.length === 1 && found[0].type === 'card' && found[0].normalized === pan;
        },
      ),
      { numRuns: 300, seed: 31 },
    );
  });
});

describe('documents, IBANs, e-mail and phone numbers', () => {
  it('takes a CPF or CNPJ by its check digits; a formatted one with wrong digits only after its name', () => {
    expect(maskAll('CPF 529.982.247-25 e 52998224725, CNPJ 11.222.333/0001-81 e 11222333000181')).toBe(
      'CPF <cpf:***.***.***-25> e <cpf:***.***.***-25>, CNPJ <cnpj:**.***.***/****-81> e <cnpj:**.***.***/****-81>',
    );
    expect(findPersonalData('pedido 123.456.789-00')).toEqual([]);
    expect(findPersonalData('meu cpf: 123.456.789-00')).toMatchObject([{ type: 'cpf', score: 0.75 }]);
    expect(findPersonalData('pedido 12345678900 e 11111111111')).toEqual([]);
    // The alphanumeric CNPJ: letters in the first twelve characters, valued as their code minus 48.
    expect(isValidCnpj('12.ABC.345/01DE-35')).toBe(true);
    expect(isValidCnpj('12.ABC.345/01DE-36')).toBe(false);
  });

  it('takes an IBAN by its country length and mod-97 check, grouped or not', () => {
    expect(maskAll('IBAN DE89 3704 0044 0532 0130 00 ou GB82WEST12345698765432.')).toBe(
      'IBAN <iban:DE89**************3000> ou <iban:GB82**************5432>.',
    );
    expect(isValidIban('DE89370400440532013001')).toBe(false);
    expect(isValidIban('BR1800360305000010009795493C1')).toBe(true);
    expect(findPersonalData('code DE12 3456')).toEqual([]);
  });

  it('takes an international or parenthesised phone number, a bare national one only after a phone word', () => {
    expect(maskAll('ligue (11) 98765-4321 ou +1 415 555 2671')).toBe(
      'ligue <phone:*********4321> ou <phone:*******2671>',
    );
    expect(findPersonalData('protocolo 98765-4321 e pedido 3456-7890')).toEqual([]);
    expect(findPersonalData('meu telefone é 3456-7890', { phoneRegion: 'BR' })).toMatchObject([
      { type: 'phone' },
    ]);
    expect(maskAll('escreva para ana.silva@exemplo.com.br')).toBe('escreva para <email:a***@exemplo.com.br>');
  });
});

describe('the personal-data policy', () => {
  it('masks, redacts or allows each class, per tenant, and never allows a card', () => {
    const config = personalDataSchema.parse({
      cpf: 'redact',
      tenants: { acme: { cpf: 'allow', card: 'redact' } },
    });
    const text = 'cartão 4111 1111 1111 1111, CPF 529.982.247-25, e-mail ana@exemplo.com';
    expect(applyPolicy(text, policyFor(config, 'globex'))).toEqual({
      text: 'cartão 411111******1111, CPF [CPF], e-mail ana@exemplo.com',
      findings: [
        { type: 'card', action: 'mask', count: 1 },
        { type: 'cpf', action: 'redact', count: 1 },
      ],
    });
    expect(applyPolicy(text, policyFor(config, 'acme')).text).toBe(
      'cartão [CARD], CPF 529.982.247-25, e-mail ana@exemplo.com',
    );
    expect(personalDataSchema.safeParse({ card: 'allow' }).success).toBe(false);
    expect(personalDataSchema.safeParse({ tenants: { acme: { card: 'allow' } } }).success).toBe(false);
    expect(personalDataSchema.safeParse({ phone_region: 'XX' }).success).toBe(false);
  });
});
