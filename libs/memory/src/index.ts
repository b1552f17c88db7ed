export * from './memory.module';
export * from './memory.service';
