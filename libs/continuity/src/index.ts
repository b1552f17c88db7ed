export * from './continuity.module';
export * from './continuity.service';
export { classifierInput, CONTINUITY_SYSTEM_PROMPT, HISTORY_MESSAGE_MAX_TOKENS } from './continuity.prompt';
export type { ContinuityPayload } from './continuity.prompt';
export { continuityOutput } from './continuity.output';
