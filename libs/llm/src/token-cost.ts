/** Prices per million tokens: input, input the provider served from its prompt cache, and output. */
export interface TokenPrices {
  input: number;
  cached_input: number;
  output: number;
}

/** Tokens of one call or many: `cached` is the part of `prompt` served from the provider's prompt cache. */
export interface TokenCounts {
  prompt: number;
  cached: number;
  completion: number;
}

/** What the tokens cost at these prices, cached prompt tokens at the cached price. */
export function tokenCost(prices: TokenPrices, tokens: TokenCounts): number {
  const uncached = tokens.prompt - tokens.cached;
  return (
    (uncached * prices.input + tokens.cached * prices.cached_input + tokens.completion * prices.output) / 1e6
  );
}
