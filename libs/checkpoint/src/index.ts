export * from './checkpoint.module';
export * from './checkpoint.service';
export * from './checkpoint.errors';
export * from './checkpoint.types';
export * from './checkpoint.store';
export { InvalidCursorError } from './postgres-checkpoint.store';
export { canonicalJson, checkpointChecksum } from './canonical-json';
