import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Attributes, SpanStatusCode, trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { TurnContextStore } from './turn-context';

/**
 * OpenTelemetry spans, off by default: without OTEL_EXPORTER_OTLP_ENDPOINT the API's no-op tracer is used,
 * so a span costs next to nothing.
 */
@Injectable()
export class TracingService implements OnApplicationShutdown {
  private readonly logger = new Logger(TracingService.name);
  private provider: NodeTracerProvider | null = null;

  enable(endpoint: string): void {
    if (this.provider) return;
    this.provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'agent-runtime' }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }))],
    });
    this.provider.register();
    this.logger.log(`tracing enabled, exporting to ${endpoint}`);
  }

  get enabled(): boolean {
    return this.provider !== null;
  }

  async span<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
    if (!this.provider) return work();
    const turn = TurnContextStore.current();
    return trace.getTracer('agent-runtime').startActiveSpan(
      name,
      {
        attributes: {
          ...attributes,
          ...(turn
            ? {
                'request.id': turn.request_id,
                'conversation.key': turn.conversation_key,
                'turn.number': turn.turn,
              }
            : {}),
        },
      },
      async (span) => {
        try {
          return await work();
        } catch (error) {
          span.recordException(error instanceof Error ? error : new Error(String(error)));
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.provider?.shutdown();
  }
}
