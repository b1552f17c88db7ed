export * from './agents.module';
export * from './agents.service';
