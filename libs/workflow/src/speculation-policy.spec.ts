import {
  ContinueShare,
  shouldSpeculate,
  SpeculationSettings,
  SpeculationSignals,
} from './speculation-policy';

const mode = (
  AGENT_SPECULATIVE_START: SpeculationSettings['AGENT_SPECULATIVE_START'],
  AGENT_SPECULATIVE_MIN_CONTINUE_SHARE = 0.5,
): SpeculationSettings => ({ AGENT_SPECULATIVE_START, AGENT_SPECULATIVE_MIN_CONTINUE_SHARE });

const signals = (patch: Partial<SpeculationSignals> = {}): SpeculationSignals => ({
  agent: 'billing_agent',
  pending: false,
  previousBlocked: false,
  keywordAgents: new Set(),
  history: { continued: 0, decided: 0 },
  ...patch,
});

describe('shouldSpeculate', () => {
  it('never speculates when off, nor on a pending operation', () => {
    expect(shouldSpeculate(mode('off'), signals())).toBe(false);
    expect(shouldSpeculate(mode('always'), signals({ pending: true }))).toBe(false);
    expect(shouldSpeculate(mode('adaptive'), signals({ pending: true }))).toBe(false);
  });

  it('always speculates otherwise when always, whatever the history', () => {
    expect(
      shouldSpeculate(
        mode('always'),
        signals({ previousBlocked: true, history: { continued: 0, decided: 9 } }),
      ),
    ).toBe(true);
  });

  it('adaptive: not after a blocked turn', () => {
    expect(shouldSpeculate(mode('adaptive'), signals({ previousBlocked: true }))).toBe(false);
  });

  it('adaptive: a keyword of the agent alone says yes, keywords of other agents say no', () => {
    const cold = { continued: 0, decided: 10 };
    expect(
      shouldSpeculate(
        mode('adaptive'),
        signals({ keywordAgents: new Set(['billing_agent']), history: cold }),
      ),
    ).toBe(true);
    expect(shouldSpeculate(mode('adaptive'), signals({ keywordAgents: new Set(['orders_agent']) }))).toBe(
      false,
    );
    expect(
      shouldSpeculate(
        mode('adaptive'),
        signals({ keywordAgents: new Set(['billing_agent', 'orders_agent']) }),
      ),
    ).toBe(false);
  });

  it('adaptive: without a keyword, the share of CONTINUE so far decides, a new agent starting at one in two', () => {
    expect(shouldSpeculate(mode('adaptive'), signals())).toBe(true);
    expect(shouldSpeculate(mode('adaptive'), signals({ history: { continued: 4, decided: 8 } }))).toBe(true);
    expect(shouldSpeculate(mode('adaptive'), signals({ history: { continued: 3, decided: 8 } }))).toBe(false);
  });

  it('adaptive: the threshold is the configured share', () => {
    const kept = { continued: 6, decided: 8 }; // (6 + 1) / (8 + 2) = 0.7
    expect(shouldSpeculate(mode('adaptive', 0.7), signals({ history: kept }))).toBe(true);
    expect(shouldSpeculate(mode('adaptive', 0.71), signals({ history: kept }))).toBe(false);
    expect(shouldSpeculate(mode('adaptive', 0.51), signals())).toBe(false);
  });
});

describe('ContinueShare', () => {
  it('counts per agent_id and agent', () => {
    const share = new ContinueShare();
    share.record('acme', 'billing_agent', true);
    share.record('acme', 'billing_agent', false);
    share.record('other', 'billing_agent', true);
    expect(share.of('acme', 'billing_agent')).toEqual({ continued: 1, decided: 2 });
    expect(share.of('acme', 'orders_agent')).toEqual({ continued: 0, decided: 0 });
  });
});
