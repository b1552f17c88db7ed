export * from './continuity.module';
export * from './continuity.service';
export { CONTINUITY_SYSTEM_PROMPT, HISTORY_MESSAGE_MAX_CHARS } from './continuity.prompt';
export type { ContinuityPayload } from './continuity.prompt';
export { continuityOutput } from './continuity.output';
