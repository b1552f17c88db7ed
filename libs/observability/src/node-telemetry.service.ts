import { Injectable } from '@nestjs/common';
import { MetricsService } from './metrics.service';
import { TracingService } from './tracing.service';
import { TurnContextStore } from './turn-context';

/** The telemetry wrapper of every workflow node: span, duration and outcome around every workflow node. */
@Injectable()
export class NodeTelemetryService {
  constructor(
    private readonly metrics: MetricsService,
    private readonly tracing: TracingService,
  ) {}

  async run<T>(node: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome: 'ok' | 'error' = 'ok';
    try {
      return await this.tracing.span(`workflow.${node}`, { 'workflow.node': node }, work);
    } catch (error) {
      outcome = 'error';
      throw error;
    } finally {
      const durationMs = performance.now() - started;
      TurnContextStore.current()?.nodes.push({
        node,
        duration_ms: Math.round(durationMs * 1000) / 1000,
        outcome,
      });
      this.metrics.nodeDuration.observe({ node, outcome }, durationMs / 1000);
    }
  }
}
