export * from './continuity.module';
export * from './continuity.service';
