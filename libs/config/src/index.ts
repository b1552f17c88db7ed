export * from './env';
export * from './env.schema';
export * from './messages';
export * from './yaml-loader';
export * from './config-files.schema';
export * from './config-files.service';
export * from './per-agent';
export * from './config.module';
