import { Global, Inject, Module, OnModuleInit } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { appConfig } from '@agent/config';
import { EventBusService } from './event-bus.service';
import { MetricsListener } from './metrics.listener';
import { MetricsService } from './metrics.service';
import { NodeTelemetryService } from './node-telemetry.service';
import { TracingService } from './tracing.service';

@Global()
@Module({
  imports: [EventEmitterModule.forRoot({ wildcard: false, ignoreErrors: true })],
  providers: [EventBusService, MetricsService, MetricsListener, NodeTelemetryService, TracingService],
  exports: [EventBusService, MetricsService, NodeTelemetryService, TracingService],
})
export class ObservabilityModule implements OnModuleInit {
  constructor(
    @Inject(appConfig.KEY) private readonly app: ConfigType<typeof appConfig>,
    private readonly tracing: TracingService,
  ) {}

  onModuleInit(): void {
    if (this.app.OTEL_EXPORTER_OTLP_ENDPOINT) this.tracing.enable(this.app.OTEL_EXPORTER_OTLP_ENDPOINT);
  }
}
