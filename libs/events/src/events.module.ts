import { Module } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConfigFileError, ConfigFilesService, eventsConfig, loadYamlFile } from '@agent/config';
import { MetricsService } from '@agent/observability';
import { DeadLetterRetentionService } from './dead-letter-retention.service';
import { DeadLetterService } from './dead-letter.service';
import { DeadLetterStore } from './dead-letter.store';
import { EventRelayService } from './event-relay.service';
import { EventRelayStore } from './event-relay.store';
import { EVENTS_ENTITIES } from './events.entities';
import { HandoffDeskService } from './handoff-desk.service';
import { NatsDestination } from './nats.destination';
import { EVENT_DESTINATIONS, EventDestination } from './outbound-event';
import { WebhookDestination } from './webhook.destination';
import { secretProblem, webhooksFileSchema } from './webhooks.config';

/** The file of webhook endpoints, so a tenant's integration is configured like the rest of the behaviour. */
export const WEBHOOKS_FILE = 'webhooks.yaml';

/**
 * The NATS stream when EVENTS_NATS_URL is set, and every enabled endpoint of webhooks.yaml. A secret variable that
 * is missing or unusable stops the start-up with the file and the endpoint, never the value.
 */
function destinations(
  config: ConfigType<typeof eventsConfig>,
  files: ConfigFilesService,
  deadLetters: DeadLetterStore,
  metrics: MetricsService,
): EventDestination[] {
  const list: EventDestination[] = [];
  const url = config.EVENTS_NATS_URL;
  if (url !== undefined) list.push(new NatsDestination({ ...config, EVENTS_NATS_URL: url }));
  const path = config.EVENTS_WEBHOOKS_PATH ?? files.path(WEBHOOKS_FILE);
  const file = loadYamlFile(path, webhooksFileSchema);
  const problems: string[] = [];
  file.endpoints.forEach((endpoint, index) => {
    if (!endpoint.enabled) return;
    const secret = process.env[endpoint.secret_env];
    const problem = secretProblem(secret);
    if (problem !== null || secret === undefined) {
      problems.push(`endpoints[${index}].secret_env: ${endpoint.secret_env} ${problem ?? 'is not set'}`);
      return;
    }
    const retry = {
      timeoutMs: endpoint.timeout_ms ?? config.EVENTS_WEBHOOK_TIMEOUT_MS,
      maxAttempts: endpoint.max_attempts ?? config.EVENTS_WEBHOOK_MAX_ATTEMPTS,
      backoffBaseMs: config.EVENTS_WEBHOOK_BACKOFF_BASE_MS,
      backoffMaxMs: config.EVENTS_WEBHOOK_BACKOFF_MAX_MS,
    };
    list.push(new WebhookDestination(endpoint, secret.trim(), retry, deadLetters, metrics));
  });
  if (problems.length > 0) throw new ConfigFileError(path, problems);
  return list;
}

/** DatabaseService (@agent/database) and the event bus (@agent/observability) come from their global modules. */
@Module({
  imports: [TypeOrmModule.forFeature(EVENTS_ENTITIES)],
  providers: [
    HandoffDeskService,
    EventRelayStore,
    EventRelayService,
    DeadLetterStore,
    DeadLetterService,
    DeadLetterRetentionService,
    {
      provide: EVENT_DESTINATIONS,
      inject: [eventsConfig.KEY, ConfigFilesService, DeadLetterStore, MetricsService],
      useFactory: destinations,
    },
  ],
  exports: [HandoffDeskService, EventRelayService, DeadLetterService, DeadLetterRetentionService],
})
export class EventsModule {}
