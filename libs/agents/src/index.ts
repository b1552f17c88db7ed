export * from './agents.module';
export * from './agents.service';
export { stripAgentPrefix } from './answer-text';
export { idempotencyKey } from './transaction.flow';
export * from './transaction.types';
export { confirmationOutput } from './confirmation-classifier';
export { parameterValuesOutput } from './parameter-extractor';
