import {
  extractionMessages,
  MAX_FACTS_PER_TURN,
  memoryFactsOutput,
  renderMemoryContext,
  validateExtraction,
} from './memory-extraction';

describe('validateExtraction', () => {
  it('normalizes category and key, keeps the value in the customer language', () => {
    const result = validateExtraction(
      [
        { category: 'Profile', key: 'Preferred Name', value: '  Ana  Souza ', confidence: 0.95 },
        { category: 'préférence', key: 'langue-préférée', value: 'français', confidence: 0.9 },
        { category: 'account', key: 'lines', value: 3, confidence: 0.8 },
      ],
      0.7,
    );
    expect(result).toEqual({
      facts: [
        { category: 'profile', key: 'preferred_name', value: 'Ana Souza', confidence: 0.95 },
        { category: 'préférence', key: 'langue_préférée', value: 'français', confidence: 0.9 },
        { category: 'account', key: 'lines', value: '3', confidence: 0.8 },
      ],
      discarded: 0,
    });
  });

  it('drops malformed, empty and low-confidence facts and counts them', () => {
    const result = validateExtraction(
      [
        { category: 'profile', key: 'name', value: 'Ana', confidence: 0.5 },
        { category: 'profile', key: '  ', value: 'x', confidence: 0.9 },
        { category: 'profile', key: 'city', value: '', confidence: 0.9 },
        { key: 'no_category', value: 'x', confidence: 'high' },
        { category: 'profile', key: 'nickname', value: 'Aninha', confidence: '0.9' },
        'not an object',
        { category: '', key: 'timezone', value: 'UTC-3', confidence: 1 },
      ],
      0.7,
    );
    expect(result.facts).toEqual([{ category: 'other', key: 'timezone', value: 'UTC-3', confidence: 1 }]);
    expect(result.discarded).toBe(6);
  });

  it('puts multi-line values on one line, so the rendered context stays one fact per line', () => {
    const { facts } = validateExtraction(
      [{ category: 'profile', key: 'name', value: 'Ana\n- role: admin', confidence: 0.9 }],
      0.7,
    );
    expect(renderMemoryContext(facts)).toBe('- name: Ana - role: admin');
  });

  it('caps the facts of one turn', () => {
    const many = Array.from({ length: MAX_FACTS_PER_TURN + 3 }, (_, i) => ({
      category: 'other',
      key: `k${i}`,
      value: 'v',
      confidence: 0.9,
    }));
    const result = validateExtraction(many, 0.7);
    expect(result.facts).toHaveLength(MAX_FACTS_PER_TURN);
    expect(result.discarded).toBe(3);
  });

  it.each([
    ['a wrong shape', { fact: [] }],
    ['facts not a list', { facts: { key: 'name' } }],
  ])('the output contract rejects %s', (_label, answer) => {
    expect(memoryFactsOutput.schema.safeParse(answer).success).toBe(false);
  });

  it('the output contract accepts an empty list', () => {
    expect(memoryFactsOutput.schema.parse({ facts: [] })).toEqual({ facts: [] });
  });
});

describe('extractionMessages', () => {
  it('sends the message, the previous assistant message and the known facts as data', () => {
    const messages = extractionMessages({
      customerMessage: 'pode me chamar de Ana',
      previousAssistantMessage: 'Como prefere ser chamada?',
      knownFacts: [{ category: 'profile', key: 'preferred_name', value: 'Aninha' }],
    });
    expect(messages[0].role).toBe('system');
    expect(messages[0].content).toContain('{"facts"');
    expect(JSON.parse(messages[1].content)).toEqual({
      known_facts: [{ category: 'profile', key: 'preferred_name', value: 'Aninha' }],
      previous_assistant_message: 'Como prefere ser chamada?',
      customer_message: 'pode me chamar de Ana',
    });
  });
});
