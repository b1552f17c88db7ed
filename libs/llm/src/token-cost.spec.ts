import { tokenCost } from './token-cost';

describe('tokenCost', () => {
  it('prices cached prompt tokens at the cached price and the rest of the prompt at the input price', () => {
    const prices = { input: 2, cached_input: 0.5, output: 8 };
    expect(tokenCost(prices, { prompt: 1_000_000, cached: 0, completion: 0 })).toBe(2);
    expect(tokenCost(prices, { prompt: 1_000_000, cached: 600_000, completion: 0 })).toBeCloseTo(0.8 + 0.3);
    expect(tokenCost(prices, { prompt: 0, cached: 0, completion: 500_000 })).toBe(4);
  });
});
