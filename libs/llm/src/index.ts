export * from './llm.module';
export * from './llm.service';
export * from './llm.errors';
export * from './structured-output';
export { PROVIDER_PRESETS, TIER_VARIABLES, profileSettings } from './providers';
