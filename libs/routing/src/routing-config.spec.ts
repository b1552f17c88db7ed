import { join } from 'node:path';
import { loadYamlFile, routingFileSchema } from '@agent/config';

const shipped = loadYamlFile(join(__dirname, '..', '..', '..', 'config', 'routing.yaml'), routingFileSchema);

const base = {
  router: { fallback_agent: 'billing_agent' },
  intents: [{ name: 'invoice', description: 'Invoices', agent: 'billing_agent', domain: 'telecom' }],
};

function issues(file: unknown): string[] {
  const result = routingFileSchema.safeParse(file);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('routing.yaml schema', () => {
  it('loads the shipped catalogue with its routing defaults', () => {
    expect(shipped.router).toMatchObject({
      mode: 'router',
      fallback_agent: 'billing_agent',
      confidence_threshold: 0.65,
      llm_profile: 'router',
      strategy: 'keyword_first',
    });
    expect(shipped.supervisor.max_intents).toBe(3);
    expect(shipped.intents.every((intent) => intent.label && !intent.handoff)).toBe(true);
  });

  it('fills defaults for a minimal file', () => {
    const parsed = routingFileSchema.parse(base);
    expect(parsed.router).toMatchObject({ mode: 'router', allow_handoff: true, strategy: 'keyword_first' });
    expect(parsed.intents[0]).toMatchObject({ priority: 100, enabled: true, handoff: false, keywords: [] });
    expect(parsed.supervisor.deferred_topics_message).toContain('{topics}');
  });

  it('rejects a handoff intent unless router.allow_handoff is on', () => {
    const intents = [{ ...base.intents[0], handoff: true }];
    expect(issues({ ...base, intents })).toEqual([]);
    expect(issues({ router: { ...base.router, allow_handoff: false }, intents })).toEqual([
      'intents.0.handoff: handoff: true needs router.allow_handoff: true',
    ]);
  });

  // Agents named here are checked against agents.yaml when both files load (config-files.service.spec.ts).
  it('rejects duplicate intents and states, and keywords without a letter or digit', () => {
    expect(
      issues({
        router: { fallback_agent: 'billing_agent' },
        state_policies: [
          { state: 'WAITING_X', agent: 'billing_agent' },
          { state: 'WAITING_X', agent: 'billing_agent' },
        ],
        intents: [{ ...base.intents[0], keywords: ['?!'] }, { ...base.intents[0] }],
      }).sort(),
    ).toEqual(
      [
        'intents.0.keywords.0: must contain a letter or a digit',
        'intents.1.name: duplicate intent "invoice"',
        'state_policies.1.state: duplicate state policy "WAITING_X"',
      ].sort(),
    );
  });

  it('rejects an unknown strategy, mode or supervisor key', () => {
    expect(issues({ ...base, router: { ...base.router, strategy: 'random' } })).toHaveLength(1);
    expect(issues({ ...base, router: { ...base.router, mode: 'swarm' } })).toHaveLength(1);
    expect(issues({ ...base, supervisor: { max_topics: 2 } })).toHaveLength(1);
  });
});
