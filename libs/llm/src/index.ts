export * from './llm.module';
export * from './llm.service';
export * from './llm.errors';
export { confidenceSchema, structuredOutput } from './structured-output';
export type { StructuredOutput } from './structured-output';
export { profileSettings } from './providers';
export type { TextListener } from './chat-stream';
