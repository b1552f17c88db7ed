import { Module } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { eventsConfig } from '@agent/config';
import { EventRelayService } from './event-relay.service';
import { EventRelayStore } from './event-relay.store';
import { HandoffDeskService } from './handoff-desk.service';
import { NatsDestination } from './nats.destination';
import { EVENT_DESTINATIONS, EventDestination } from './outbound-event';

/** DatabaseService (@agent/database) and the event bus (@agent/observability) come from their global modules. */
@Module({
  providers: [
    HandoffDeskService,
    EventRelayStore,
    EventRelayService,
    {
      provide: EVENT_DESTINATIONS,
      inject: [eventsConfig.KEY],
      useFactory: (config: ConfigType<typeof eventsConfig>): EventDestination[] => {
        const destinations: EventDestination[] = [];
        const url = config.EVENTS_NATS_URL;
        if (url !== undefined) destinations.push(new NatsDestination({ ...config, EVENTS_NATS_URL: url }));
        return destinations;
      },
    },
  ],
  exports: [HandoffDeskService, EventRelayService],
})
export class EventsModule {}
