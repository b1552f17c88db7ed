export * from './judges.module';
export * from './judges.service';
