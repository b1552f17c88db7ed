export * from './database.module';
export * from './database.service';
export * from './database.errors';
export * from './data-source.factory';
export * from './embedded-postgres';
export * from './data-dir-lock';
export * from './statement';
