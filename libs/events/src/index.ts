export * from './events.module';
export * from './event-relay.service';
export * from './handoff-desk.service';
export * from './nats.destination';
export * from './outbound-event';
