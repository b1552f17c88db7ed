export * from './llm.module';
export * from './llm.service';
export * from './llm.errors';
export { confidenceSchema, structuredOutput } from './structured-output';
export type { StructuredOutput } from './structured-output';
export { profileSettings } from './providers';
export { tokenCost } from './token-cost';
export type { TokenCounts, TokenPrices } from './token-cost';
export type { TextListener } from './chat-stream';
