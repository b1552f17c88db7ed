import { join } from 'node:path';
import { loadYamlFile, SERVICE_LANGUAGES, SERVICE_MESSAGES } from '@agent/config';
import { TRANSACTION_SETTINGS_FILE } from './transaction.engine';
import { transactionSettingsSchema, TransactionTexts } from './transaction-settings';

const shipped = loadYamlFile(
  join(__dirname, '..', '..', '..', 'config', TRANSACTION_SETTINGS_FILE),
  transactionSettingsSchema,
);

describe('TransactionTexts', () => {
  it('takes the messages from the catalogue in DEFAULT_LANGUAGE unless the file names a language', () => {
    expect(new TransactionTexts(shipped, 'en').messages).toEqual(SERVICE_MESSAGES.en.transactions);
    expect(new TransactionTexts(shipped, 'es').messages).toEqual(SERVICE_MESSAGES.es.transactions);
    const pinned = transactionSettingsSchema.parse({ language: 'pt' });
    expect(new TransactionTexts(pinned, 'en').messages).toEqual(SERVICE_MESSAGES.pt.transactions);
  });

  it('lets the file replace single messages and keeps the rest of the language', () => {
    const settings = transactionSettingsSchema.parse({
      messages: { cancelled: 'Fine, {operation} is off.' },
    });
    const texts = new TransactionTexts(settings, 'en');
    expect(texts.messages.cancelled).toBe('Fine, {operation} is off.');
    expect(texts.messages.confirm).toBe(SERVICE_MESSAGES.en.transactions.confirm);
    expect(() => transactionSettingsSchema.parse({ messages: { canceled: 'typo' } })).toThrow();
  });

  it('picks each label in the language, falling back to the name', () => {
    const settings = transactionSettingsSchema.parse({
      operations: { cancelar_pedido: { pt: 'o cancelamento', en: 'the cancellation' }, trocar: 'a troca' },
      fields: { order_id: { es: 'el pedido' } },
      argument_labels: { order_id: { en: 'order' } },
    });
    const en = new TransactionTexts(settings, 'en');
    expect(en.operation('cancelar_pedido')).toBe('the cancellation');
    expect(en.operation('trocar')).toBe('a troca');
    expect(new TransactionTexts(settings, 'es').operation('cancelar_pedido')).toBe('cancelar pedido');
    expect(en.field('order_id')).toBeNull();
    expect(en.argument('order_id')).toBe('order');
    expect(en.argument('reason')).toBe('reason');
    expect(en.list(['a', 'b', 'c'])).toBe('a, b and c');
    expect(new TransactionTexts(settings, 'es').list(['a', 'b'])).toBe('a y b');
  });

  it('ships every label of transactions.yaml in every language', () => {
    const labels = [shipped.operations, shipped.fields, shipped.argument_labels].flatMap(Object.values);
    expect(labels.length).toBeGreaterThan(0);
    for (const label of labels) {
      expect(Object.keys(label).sort()).toEqual([...SERVICE_LANGUAGES].sort());
    }
  });
});
