import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from './fake-llm';

/** The continuity classifier's verdict for a customer message, as the scripted small model answers it. */
export type ContinuityLabels = Record<string, { decision: string; confidence: number }>;

function payloadField(request: FakeChatRequest, field: string): string {
  try {
    const payload = JSON.parse(lastUserMessage(request)) as Record<string, unknown>;
    const value = payload[field];
    return typeof value === 'string' ? value : lastUserMessage(request);
  } catch {
    return lastUserMessage(request);
  }
}

/**
 * A whole scripted pipeline for operator-facing tests: the classifier answers from `labels` (ROUTE when a
 * message has none), the router knows plans ("plano") and invoices ("fatura"), the agent echoes its subject,
 * and every other stage answers something innocuous and valid.
 */
export function scriptStages(fake: FakeLlmServer, labels: ContinuityLabels): void {
  fake.script({
    model: 'route_continuity',
    reply: (request) => {
      const label = labels[payloadField(request, 'current_message')] ?? {
        decision: 'ROUTE',
        confidence: 0.99,
      };
      return {
        json: { ...label, reason: `scripted ${label.decision}` },
        usage: { prompt_tokens: 310, completion_tokens: 14 },
      };
    },
  });
  fake.script({
    model: 'router',
    reply: (request) => {
      const text = payloadField(request, 'message').toLowerCase();
      const intent = text.includes('fatura')
        ? 'billing_invoice_explanation'
        : text.includes('plano') || text.includes('incluso')
          ? 'product_services_information'
          : 'unknown';
      return {
        json: { intent, confidence: intent === 'unknown' ? 0 : 0.97, reason: 'scripted' },
        usage: { prompt_tokens: 420, completion_tokens: 20 },
      };
    },
  });
  fake.script({
    model: 'agent',
    reply: (request) => ({
      content: `Resposta sobre: ${lastUserMessage(request).slice(0, 60)}`,
      usage: { prompt_tokens: 500, completion_tokens: 40 },
    }),
  });
  fake.script(GUARDRAILS_ALLOW);
  fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });
  fake.script({ model: 'confirmation', reply: { json: { decision: 'OTHER', confidence: 0.9 } } });
  fake.script({ model: 'memory_extraction', reply: { json: { facts: [] } } });
  fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'unscripted' } });
}
