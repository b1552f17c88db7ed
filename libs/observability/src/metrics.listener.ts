import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import type { CommittedEvent, GuardrailRailEvent } from '@agent/contracts';
import { MetricsService } from './metrics.service';

/**
 * The counters of what turns decided, kept by listening to the committed events rather than beside each emit:
 * a turn that fails before its commit counts nothing. Call-level measures (LLM calls, node and lock timings)
 * stay where the work happens, because that work was done whether or not the turn commits.
 */
@Injectable()
export class MetricsListener {
  constructor(private readonly metrics: MetricsService) {}

  @OnEvent('router.continuity')
  continuity(event: CommittedEvent<'router.continuity'>): void {
    this.metrics.continuityDecisions.inc({
      decision: event.decision,
      accepted: String(event.accepted),
      fallback_reason: event.fallback_reason ?? 'none',
    });
  }

  @OnEvent('router.continuity.shadow')
  shadow(event: CommittedEvent<'router.continuity.shadow'>): void {
    this.metrics.continuityShadow.inc({ agreed: String(event.agreed) });
  }

  @OnEvent('session.human_handoff.requested')
  handedOff(event: CommittedEvent<'session.human_handoff.requested'>): void {
    this.metrics.sessionsHandedOff.inc({ source: event.source });
  }

  @OnEvent('session.end.requested')
  ended(event: CommittedEvent<'session.end.requested'>): void {
    this.metrics.sessionsEnded.inc({ source: event.source });
  }

  /** Rail results by action (GRL.002 to GRL.007) and fail-closed blocks (GRL.008). */
  @OnEvent('GRL.002')
  @OnEvent('GRL.003')
  @OnEvent('GRL.004')
  @OnEvent('GRL.005')
  @OnEvent('GRL.006')
  @OnEvent('GRL.007')
  @OnEvent('GRL.008')
  railResult(event: GuardrailRailEvent): void {
    this.metrics.guardrailActions.inc({ stage: event.stage, code: event.code, action: event.action });
  }

  @OnEvent('GRL.009')
  railStage(event: CommittedEvent<'GRL.009'>): void {
    for (const code of event.cancelled_codes) {
      this.metrics.guardrailActions.inc({ stage: event.stage, code, action: 'cancelled' });
    }
  }
}
