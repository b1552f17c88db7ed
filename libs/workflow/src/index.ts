export * from './workflow.module';
export * from './workflow.service';
export * from './turn.service';
export * from './workflow.graph';
export * from './session-admin.service';
export * from './workflow.errors';
