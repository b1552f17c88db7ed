export * from './routing.module';
export * from './routing.service';
