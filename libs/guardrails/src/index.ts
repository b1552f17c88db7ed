export * from './guardrails.module';
export * from './guardrails.service';
export { RailAction, RAIL_STAGES } from './rail.types';
export type { Rail, RailContext, RailEvaluation, RailResult, RailStage } from './rail.types';
export { GUARDRAILS_FILE, guardrailsFileSchema } from './guardrails.config';
export type { GuardrailsFile } from './guardrails.config';
export type { GuardrailMessages } from './messages';
export type { GuardrailModelReport, GuardrailModelStatus } from './model-health';
export { railVerdictSchema } from './rails/model-verdict';
