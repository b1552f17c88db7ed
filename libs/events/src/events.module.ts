import { Module } from '@nestjs/common';
import { HandoffDeskService } from './handoff-desk.service';

/** DatabaseService (@agent/database) and the event bus (@agent/observability) come from their global modules. */
@Module({
  providers: [HandoffDeskService],
  exports: [HandoffDeskService],
})
export class EventsModule {}
