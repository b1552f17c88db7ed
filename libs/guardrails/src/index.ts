export * from './guardrails.module';
export * from './guardrails.service';
