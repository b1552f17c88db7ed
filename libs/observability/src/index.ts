export * from './observability.module';
export * from './event-bus.service';
export * from './metrics.listener';
export * from './metrics.service';
export * from './node-telemetry.service';
export * from './tracing.service';
export * from './turn-context';
export * from './failure-announcement';
