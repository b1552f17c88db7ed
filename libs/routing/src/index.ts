export * from './routing.module';
export * from './routing.service';
export { routerOutput } from './llm-intent-classifier';
export { KeywordIndex, matchKeyword, tokenize } from './keyword-matcher';
export { planOutput } from './supervisor';
