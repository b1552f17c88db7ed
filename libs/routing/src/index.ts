export * from './routing.module';
export * from './routing.service';
export { routerOutput } from './llm-intent-classifier';
export { planOutput } from './supervisor';
