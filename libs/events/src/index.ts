export * from './events.module';
export * from './handoff-desk.service';
