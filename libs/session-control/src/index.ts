export * from './session-control.module';
export * from './session-control.service';
