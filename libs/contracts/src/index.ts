export * from './agent-state';
export * from './route-decision';
export * from './transaction';
export * from './events';
export * from './llm-contracts';
export * from './text-folding';
export * from './content-screen';
export * from './coded-error';
