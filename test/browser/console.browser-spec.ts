import { SERVICE_MESSAGES } from '@agent/config';
import type { Browser, Page } from 'playwright-core';
import type { components } from '../../apps/console/src/api/openapi';
import { formatPercent } from '../../apps/console/src/format';
import { launchChromium, screenshot } from '../support/browser';
import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { streamTurn } from '../support/turn-stream-client';

// Tenants of their own, so listings are exact even when other suites share the database.
const TENANT = `con${Date.now().toString(36)}`;
const OTHER = `${TENANT}-other`;
const STATS_TENANT = `${TENANT}-stats`;
const LIST_TENANT = `${TENANT}-list`;
const PHONE_TENANT = `${TENANT}-phone`;
const ADMIN_KEY = 'console-admin-global';
const TENANT_ADMIN_KEY = 'console-admin-tenant';
const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const TENANT_ADMIN = { authorization: `Bearer ${TENANT_ADMIN_KEY}` };
const CHANNEL_KEYS: Record<string, string> = {
  [TENANT]: 'console-channel',
  [OTHER]: 'console-channel-other',
  [STATS_TENANT]: 'console-channel-stats',
  [LIST_TENANT]: 'console-channel-list',
  [PHONE_TENANT]: 'console-channel-phone',
};
type StickinessStats = components['schemas']['StickinessStatsDto'];
/** A phone's viewport width, CSS pixels. */
const PHONE_WIDTH = 390;
/** The console's page size. */
const PAGE_SIZE = 25;

/** Booting the app with a fresh embedded PGlite can take minutes on a busy machine. */
const APP_START_TIMEOUT_MS = 240_000;

const LABELS = {
  'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
  'e o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
  'talvez a fatura': { decision: 'CONTINUE', confidence: 0.4 },
  'quero falar com uma pessoa': { decision: 'HUMAN_HANDOFF', confidence: 0.99 },
};

describe('operator console in Chromium', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CHANNEL_API_KEYS: Object.entries(CHANNEL_KEYS)
          .map(([tenant, key]) => `${tenant}:${key}`)
          .join(','),
        // The console's global key has a name: claims record it.
        ADMIN_API_KEYS: `lead@*:${ADMIN_KEY},${TENANT}:${TENANT_ADMIN_KEY}`,
        HUMAN_HANDOFF_MODE: 'hold',
        ENABLE_ROUTE_STICKINESS: 'true',
        // Every accepted CONTINUE is also compared with the router, so the statistics have a shadow agreement.
        ROUTE_STICKINESS_SHADOW_RATE: '1',
      },
    });
    browser = await launchChromium();
  }, APP_START_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await fake?.stop();
  });

  beforeEach(async () => {
    fake.reset();
    scriptStages(fake, LABELS);
    // A fixed locale, so the figures the page formats can be compared with the API's numbers.
    page = await browser.newPage({ viewport: { width: 1366, height: 800 }, locale: 'en-US' });
  });

  afterEach(async () => {
    await page?.close();
  });

  const say = async (sessionId: string, text: string, tenant = TENANT, agent = 'telecom_contas') => {
    const res = await app.post(
      '/v1/channels/web/messages',
      { tenant_id: tenant, agent_id: agent, session_id: sessionId, text, user_id: 'user-1' },
      { authorization: `Bearer ${CHANNEL_KEYS[tenant]}` },
    );
    expect(res.status).toBe(200);
    return res.body;
  };

  /** The same message with its answer streamed (server-sent events); returns once the stream ended. */
  const sayStreamed = async (sessionId: string, text: string) => {
    const { final } = await streamTurn(
      app.baseUrl,
      { tenant_id: TENANT, agent_id: 'telecom_contas', session_id: sessionId, text, user_id: 'user-1' },
      { headers: { authorization: `Bearer ${CHANNEL_KEYS[TENANT]}` } },
    );
    expect(final).toBeDefined();
  };

  const signIn = async (key: string) => {
    await page.goto(`${app.baseUrl}/console/`);
    await page.getByLabel('Admin API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  const sessionRows = (sessionId: string) => page.getByRole('rowheader', { name: sessionId });

  /** Waits until page `n` of the list has loaded with exactly these sessions, in this order. */
  const expectListed = async (n: number, expected: string[]) => {
    await expectVisible(page.locator('caption', { hasText: new RegExp(`— page ${n}$`) }));
    const listed = () => page.locator('tbody th[scope="row"] a').allTextContents();
    const deadline = Date.now() + 15_000;
    while ((await listed()).join() !== expected.join() && Date.now() < deadline) {
      await page.waitForTimeout(100);
    }
    expect(await listed()).toEqual(expected);
  };

  const applyFilters = async ({ agent = '', activity = '' }: { agent?: string; activity?: string }) => {
    await page.getByLabel('Agent id').fill(agent);
    await page.getByLabel('Last activity').selectOption(activity);
    await page.getByRole('button', { name: 'Apply filters' }).click();
  };

  const openDesk = async () => {
    await signIn(ADMIN_KEY);
    await page.getByRole('link', { name: 'Handoff desk' }).click();
    // The desk's own form: the sessions view's tenant field may still be on the page right after the click.
    const form = page.getByRole('search', { name: 'Filter the desk' });
    await form.getByLabel('Tenant').fill(TENANT);
    await form.getByRole('button', { name: 'Show' }).click();
  };

  const deskCard = (sessionId: string) =>
    page.getByRole('article', { name: new RegExp(`^${sessionId}, waiting \\d+ s$`) });

  const handHeld = async (sessionId: string) => {
    await say(sessionId, 'Qual é o meu plano?');
    expect(await say(sessionId, 'quero falar com uma pessoa')).toMatchObject({
      session_control: 'HUMAN_HANDOFF',
    });
  };

  it('is served at /console/ as static files under a strict content security policy', async () => {
    const bare = await fetch(`${app.baseUrl}/console`, { redirect: 'manual' });
    expect([301, 302]).toContain(bare.status);
    expect(bare.headers.get('location')).toBe('/console/');
    const index = await fetch(`${app.baseUrl}/console/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await index.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${app.baseUrl}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    // The data is not there: only the admin API, with a key, serves it.
    expect(html).not.toContain(TENANT);
  });

  it('refuses a wrong key and keeps nothing', async () => {
    await signIn('not-a-key');
    await expectVisible(page.getByRole('alert').filter({ hasText: 'This key was refused' }));
    await expect(page.getByText('Authentication is off').count()).resolves.toBe(0);
    await screenshot(page, 'sign-in-refused');
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    await expectVisible(page.getByLabel('Admin API key'));
  });

  it('lists the sessions of a tenant for a global key, filtered by status', async () => {
    const first = uniqueId('web');
    const second = uniqueId('web');
    await say(first, 'Minha fatura veio alta');
    await say(second, 'Qual é o meu plano?');
    await say(uniqueId('web'), 'Minha fatura', OTHER);

    await signIn(ADMIN_KEY);
    await expectVisible(page.getByText('Signed in: all tenants (as lead)'));
    await page.getByLabel('Tenant').fill(TENANT);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    // The unfiltered list (every tenant's sessions) shows both rows too: wait for the filtered one to replace it.
    await page.waitForURL((url) => url.hash.includes(`tenant=${TENANT}`));
    await expectVisible(sessionRows(first));
    await expectVisible(sessionRows(second));
    await page.waitForFunction("document.querySelectorAll('tbody tr').length === 2", undefined, {
      timeout: 15_000,
    });
    await screenshot(page, 'sessions');

    await page.getByLabel('Status').selectOption('ended');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expectVisible(page.getByText('No session matches these filters.'));

    // A reload keeps the key (sessionStorage) and the filters (URL).
    await page.reload();
    await expectVisible(page.getByText('No session matches these filters.'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expectVisible(page.getByLabel('Admin API key'));
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
  });

  it('pages through the sessions and narrows them by agent and last activity, alone and together', async () => {
    // More than a page: 27 conversations with one agent and 2 with another.
    const telecom = Array.from({ length: PAGE_SIZE + 2 }, () => uniqueId('pg'));
    const retail = [uniqueId('pg'), uniqueId('pg')];
    const all = [...telecom, ...retail];
    const idle = [telecom[PAGE_SIZE + 1], retail[1]];
    try {
      for (let i = 0; i < all.length; i += 4) {
        await Promise.all(
          all
            .slice(i, i + 4)
            .map((id) =>
              say(id, 'Minha fatura', LIST_TENANT, retail.includes(id) ? 'retail_orders' : 'telecom_contas'),
            ),
        );
      }
      // Last activity one second apart in the order of `all`, so the order of the list is known; the idle ones
      // two hours back, out of the last hour. The first of page 2 is 200 µs older than the last of page 1, in
      // the same millisecond, as concurrent turns commit: the pager must not skip it.
      const ago = all.map(
        (id, index) => index + (idle.includes(id) ? 7200 : 0) - (index === PAGE_SIZE ? 0.9998 : 0),
      );
      await app.dataSource.query(
        `UPDATE sessions s
            SET updated_at = date_trunc('milliseconds', now()) + interval '500 microseconds'
                             - make_interval(secs => v.ago)
           FROM unnest($1::text[], $2::float8[]) AS v(conversation_key, ago)
          WHERE s.conversation_key = v.conversation_key`,
        [all.map((id) => `${LIST_TENANT}:${id}`), ago],
      );
      const newestFirst = all.filter((id) => !idle.includes(id)).concat(idle);
      const recent = newestFirst.filter((id) => !idle.includes(id));

      await signIn(ADMIN_KEY);
      await page.getByLabel('Tenant').fill(LIST_TENANT);
      await page.getByRole('button', { name: 'Apply filters' }).click();
      const next = page.getByRole('button', { name: 'Next page' });
      const previous = page.getByRole('button', { name: 'Previous page' });
      await expectListed(1, newestFirst.slice(0, PAGE_SIZE));
      expect(await previous.isDisabled()).toBe(true);
      // A double click moves one page, not two.
      await next.dblclick();
      await expectListed(2, newestFirst.slice(PAGE_SIZE));
      expect(await next.isDisabled()).toBe(true);
      await screenshot(page, 'sessions-page-2');
      await previous.click();
      await expectListed(1, newestFirst.slice(0, PAGE_SIZE));

      // The agent alone; with the last hour too, the idle conversation drops out.
      await applyFilters({ agent: 'retail_orders' });
      await expectListed(1, retail);
      expect(await next.isDisabled()).toBe(true);
      expect(page.url()).toContain('agent=retail_orders');
      await applyFilters({ agent: 'retail_orders', activity: '1h' });
      await expectListed(1, [retail[0]]);
      expect(page.url()).toMatch(/agent=retail_orders.*activity=1h/);
      // The last hour alone still needs two pages, and the pager keeps the filter.
      await applyFilters({ activity: '1h' });
      await expectListed(1, recent.slice(0, PAGE_SIZE));
      await next.click();
      await expectListed(2, recent.slice(PAGE_SIZE));
      // A reload keeps the filters, and starts again from the first page.
      await page.reload();
      await expectListed(1, recent.slice(0, PAGE_SIZE));
      expect(await page.getByLabel('Last activity').inputValue()).toBe('1h');
    } finally {
      for (const id of all) {
        await app.request('DELETE', `/v1/admin/sessions/${id}?tenant_id=${LIST_TENANT}`, undefined, ADMIN);
      }
    }
  });

  it('opens a timeline with the continuity decision and route of each turn, and marks operator actions', async () => {
    const id = uniqueId('web');
    await say(id, 'Qual é o meu plano?');
    // The second turn's answer is streamed: the timeline shows when its first text left.
    await sayStreamed(id, 'e o que está incluso?');
    const served = await app.get<{ turns: { first_text_ms: number | null }[] }>(
      `/v1/admin/sessions/${id}/timeline?tenant_id=${TENANT}`,
      ADMIN,
    );
    const firstText = served.body.turns[1].first_text_ms;
    expect(firstText).toEqual(expect.any(Number));
    // The third turn's agent model refuses the key: an outage the timeline names, not a verdict.
    fake.reset();
    fake.script({ model: 'agent', reply: { status: 401, rawBody: '{"error":{"message":"bad key"}}' } });
    scriptStages(fake, LABELS);
    await say(id, 'talvez a fatura');

    await signIn(ADMIN_KEY);
    await page.getByLabel('Tenant').fill(TENANT);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('link', { name: id }).click();
    await expectVisible(page.getByRole('heading', { name: `Conversation ${id}` }));
    const turn = (n: number) => page.getByRole('article', { name: `Turn ${n}` });
    await expectVisible(turn(3));
    const text = async (n: number) => (await turn(n).textContent()) ?? '';
    expect(await text(1)).toContain('Qual é o meu plano?');
    expect(await text(1)).toContain('product_agent · product_services_information');
    expect(await text(1)).toContain('ROUTE at 98.0 %, accepted');
    expect(await text(2)).toContain('CONTINUE at 97.0 %, accepted');
    expect(await text(2)).toContain('continuity (router skipped)');
    expect(await text(2)).toContain('router skipped');
    expect(await text(1)).toContain('First text—');
    expect(await text(2)).toContain(`First text${Number(firstText).toFixed(0)} ms`);
    expect(await text(3)).toContain('billing_agent');
    expect(await text(3)).toContain(
      'CONTINUE at 40.0 %, overruled — fallback: confidence below the threshold',
    );
    await expectVisible(
      turn(3)
        .getByRole('note')
        .filter({ hasText: 'Could not use the model of profile agent (http_error 401)' }),
    );
    expect(await turn(2).getByRole('note').count()).toBe(0);
    await turn(2).getByText('Node timings and model calls').click();
    await expectVisible(turn(2).getByRole('rowheader', { name: 'route_continuity' }));
    await screenshot(page, 'timeline');

    // Ending the session asks first; the action is then marked after the last turn.
    await page.getByRole('button', { name: 'End session' }).click();
    const dialog = page.getByRole('dialog', { name: 'End this session?' });
    await dialog.getByLabel('Reason (optional, kept with the event)').fill('resolved by phone');
    await dialog.getByRole('button', { name: 'End session' }).click();
    await expectVisible(page.getByRole('status').filter({ hasText: 'Session ended.' }));
    await expectVisible(turn(3).getByText('An operator ended the session'));
    expect(await text(3)).toContain('resolved by phone');
    await expectVisible(page.getByText('This session has ended'));
  });

  it('takes a held conversation from the handoff desk back to the agents', async () => {
    const id = uniqueId('web');
    await handHeld(id);
    expect(await say(id, 'alô? tem alguém aí?')).toMatchObject({ blocked: true });

    await openDesk();
    const card = deskCard(id);
    await expectVisible(card);
    const summary = (await card.textContent()) ?? '';
    expect(summary).toContain('user-1 · web');
    expect(summary).toContain('customer');
    expect(summary).toContain('quero falar com uma pessoa');
    expect(summary).toMatch(/Messages held since\s*1/);
    expect(summary).toMatch(/Taken by\s*nobody yet/);
    await screenshot(page, 'handoff-desk');

    // Claiming names who took it (the key's name); someone else's claim is then refused.
    await card.getByRole('button', { name: 'Claim' }).click();
    await expectVisible(card.getByRole('button', { name: 'Claimed' }));
    expect(await card.getByRole('button', { name: 'Claimed' }).isDisabled()).toBe(true);
    expect(await card.textContent()).toMatch(/Taken by\s*lead \(you\) at /);
    const stolen = await app.post(`/v1/admin/sessions/${id}/claim?tenant_id=${TENANT}`, {}, TENANT_ADMIN);
    expect(stolen.status).toBe(409);
    expect(stolen.body).toMatchObject({
      error: { code: 'HANDOFF_CLAIMED', details: { claimed_by: 'lead' } },
    });

    await card.getByRole('button', { name: 'Resume to the agents' }).click();
    const dialog = page.getByRole('dialog', { name: 'Give this conversation back to the agents?' });
    await dialog.getByRole('button', { name: 'Resume to the agents' }).click();
    await card.waitFor({ state: 'detached', timeout: 15_000 });

    // The customer's next message is answered by an agent again.
    const next = await say(id, 'e o que está incluso?');
    expect(next).toMatchObject({ blocked: false, session_control: null });
    expect(String(next.answer)).toContain('Resposta sobre');
    await page.goto(`${app.baseUrl}/console/#/sessions/${TENANT}/${id}`);
    const turn = (n: number) => page.getByRole('article', { name: `Turn ${n}` });
    await expectVisible(turn(4));
    expect(await turn(3).textContent()).toContain('An operator gave the conversation back to the agents');
    expect(await turn(4).textContent()).toContain('Resposta sobre: e o que está incluso?');
  });

  it('ends a held conversation from the handoff desk, after asking, and the customer is told it ended', async () => {
    const id = uniqueId('web');
    await handHeld(id);

    await openDesk();
    const card = deskCard(id);
    await expectVisible(card);
    const status = async () =>
      (await app.get<{ session: { status: string } }>(`/v1/admin/sessions/${id}?tenant_id=${TENANT}`, ADMIN))
        .body.session.status;

    // Cancelling the confirmation does nothing.
    await card.getByRole('button', { name: 'End session' }).click();
    const dialog = page.getByRole('dialog', { name: 'End this session?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(await status()).toBe('handoff');
    await expectVisible(card);

    await card.getByRole('button', { name: 'End session' }).click();
    await dialog.getByLabel('Reason (optional, kept with the event)').fill('customer called back');
    await dialog.getByRole('button', { name: 'End session' }).click();
    await card.waitFor({ state: 'detached', timeout: 15_000 });
    expect(await status()).toBe('ended');
    const waiting = await app.get<{ items: { session_id: string }[] }>(
      `/v1/admin/handoffs?tenant_id=${TENANT}`,
      ADMIN,
    );
    expect(waiting.body.items.map((item) => item.session_id)).not.toContain(id);

    // The customer's next message gets the ended-session answer, and no agent runs.
    const calls = fake.requests.length;
    expect(await say(id, 'alô? ainda está aí?')).toMatchObject({
      blocked: true,
      session_ended: true,
      answer: SERVICE_MESSAGES.pt.session_already_ended,
    });
    const models = fake.requests.slice(calls).map((request) => request.model);
    expect(models).not.toContain('route_continuity');
    expect(models).not.toContain('agent');
    await page.goto(`${app.baseUrl}/console/#/sessions/${TENANT}/${id}`);
    const handedOver = page.getByRole('article', { name: 'Turn 2' });
    await expectVisible(handedOver.getByText('An operator ended the session'));
    expect(await handedOver.textContent()).toContain('customer called back');
  });

  it('charts stickiness and cost over a period, with the figures of the stats API', async () => {
    const id = uniqueId('web');
    // The shadow router agrees with the first follow-up (kept with the product agent) and not with the last
    // (kept with the billing agent while asking about the plan).
    for (const text of [
      'Qual é o meu plano?',
      'e o que está incluso?',
      'talvez a fatura',
      'e o que está incluso?',
    ]) {
      await say(id, text, STATS_TENANT);
    }

    await signIn(ADMIN_KEY);
    await page.getByRole('link', { name: 'Stickiness and cost' }).click();
    // The period form itself: right after the click the previous view's tenant field may still be on the page.
    const form = page.getByRole('search', { name: 'Choose the period' });
    await form.getByLabel('Tenant').fill(STATS_TENANT);
    await form.getByLabel('Period', { exact: true }).selectOption('24h');
    const asked = page.waitForRequest((request) => request.url().includes(`tenant_id=${STATS_TENANT}`));
    await form.getByRole('button', { name: 'Show' }).click();
    // The same period, asked of the API by the test.
    const period = new URL((await asked).url()).searchParams;
    expect(Date.parse(period.get('to') ?? '') - Date.parse(period.get('from') ?? '')).toBe(86_400_000);
    const res = await app.get<StickinessStats>(`/v1/admin/stats?${period.toString()}`, ADMIN);
    expect(res.status).toBe(200);
    const stats = res.body;
    expect(stats).toMatchObject({ turns: 4, router_calls_avoided: 2, shadow: { compared: 2, agreed: 1 } });
    // The router's keyword stage decides these messages: no router model call.
    expect(stats.profiles.map((profile) => profile.profile)).toEqual([
      'agent',
      'guardrail',
      'route_continuity',
    ]);

    const figure = (name: string) =>
      page
        .locator('dl.figures > div')
        .filter({ has: page.locator('dt').getByText(name, { exact: true }) })
        .locator('dd')
        .allTextContents();
    await expectVisible(page.getByText(`Tenant ${STATS_TENANT}`));
    const count = (value: number) => value.toLocaleString('en-US');
    const ms = (value: number | null) => (value === null ? '—' : `${Math.round(value)} ms`);
    expect(await figure('Turns')).toEqual([count(stats.turns)]);
    expect(await figure('Bypass rate')).toEqual(['50.0 %', '2 turns kept with their agent']);
    expect((await figure('Router calls avoided'))[0]).toBe(count(stats.router_calls_avoided));
    expect(await figure('Shadow agreement')).toEqual([
      formatPercent(stats.shadow.agreement_rate),
      '1 of 2 compared',
    ]);
    expect(formatPercent(stats.shadow.agreement_rate)).toBe('50.0 %');
    expect(await figure('Turn latency p50 · p95')).toEqual([
      `${ms(stats.turn_latency_ms.p50)} · ${ms(stats.turn_latency_ms.p95)}`,
    ]);
    expect(stats.turn_latency_ms.p50).not.toBeNull();
    for (const title of [
      'Turns over time',
      'Continuity decisions',
      'Fallback reasons',
      'Tokens by LLM profile',
      'Model time per turn by LLM profile (ms)',
    ]) {
      const chart = page.getByRole('figure', { name: title });
      await expectVisible(chart.locator('svg'));
    }
    // The figures behind a chart, as a table for those who do not read charts.
    const data = async (title: string) => {
      const chart = page.getByRole('figure', { name: title });
      await chart.getByText(`Data of “${title}”`).click();
      await expectVisible(chart.locator('tbody'));
      const rows = chart.locator('tbody tr');
      return Promise.all((await rows.all()).map((row) => row.locator('td').allTextContents()));
    };
    expect(await data('Fallback reasons')).toEqual([['below the threshold', '1']]);
    expect(await data('Tokens by LLM profile')).toEqual(
      stats.profiles.map((p) => [
        p.profile,
        ...[p.calls, p.failures, p.prompt_tokens, p.cached_prompt_tokens, p.completion_tokens].map(count),
      ]),
    );
    const fixed = (value: number | null) => (value === null ? '—' : value.toFixed(1));
    expect(await data('Model time per turn by LLM profile (ms)')).toEqual(
      stats.profiles.map((p) => [p.profile, fixed(p.latency_p50_ms), fixed(p.latency_p95_ms)]),
    );
    expect(stats.profiles.every((p) => p.latency_p50_ms !== null)).toBe(true);
    // The keyword stage decided every turn: no router model call in the period prices the avoided ones.
    expect(stats.cost).toMatchObject({ currency: 'USD', router_call: null, saved: null, net_saved: null });
    expect(await figure('Money saved')).toEqual([
      '—',
      'No router model call in this period to price the avoided ones by',
      expect.stringMatching(/^\$[\d.]+ on priced model calls; no price for agent$/),
    ]);
    await expectEveryCategoryLabelled(page, stats);
    expect(page.url()).toContain('period=24h');
    await screenshot(page, 'stats');
  });

  it('works on a phone (390 px): sessions as readable rows, every chart labelled, the money stickiness saved', async () => {
    fake.reset();
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'e o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
      'quero outra coisa': { decision: 'ROUTE', confidence: 0.96 },
      'pode encerrar': { decision: 'END_SESSION', confidence: 0.99 },
      'quero falar com uma pessoa': { decision: 'HUMAN_HANDOFF', confidence: 0.99 },
    });
    const ids = [uniqueId('phone'), uniqueId('phone'), uniqueId('phone')];
    // "quero outra coisa" has no keyword: the router's model decides it, which prices an avoided router call.
    for (const text of ['Qual é o meu plano?', 'e o que está incluso?', 'quero outra coisa']) {
      await say(ids[0], text, PHONE_TENANT);
    }
    for (const text of ['Qual é o meu plano?', 'pode encerrar']) await say(ids[1], text, PHONE_TENANT);
    for (const text of ['Qual é o meu plano?', 'quero falar com uma pessoa']) {
      await say(ids[2], text, PHONE_TENANT);
    }

    await page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
    await signIn(ADMIN_KEY);
    await page.goto(`${app.baseUrl}/console/#/sessions?tenant=${PHONE_TENANT}`);
    for (const id of ids) {
      const row = page.locator('tbody tr').filter({ has: page.getByRole('link', { name: id }) });
      await expectVisible(row);
      // The session, its facts, its status and its last activity, all inside the screen.
      for (const part of [
        row.getByRole('link', { name: id }),
        row.locator('.session-facts'),
        row.locator('.badge'),
      ]) {
        await expectVisible(part);
        const box = await part.first().boundingBox();
        expect(box && box.x >= 0 && box.x + box.width <= PHONE_WIDTH).toBe(true);
      }
      await expectVisible(row.getByText(/ago$/));
    }
    await expect(page.locator('tbody tr').first().locator('.session-facts').textContent()).resolves.toContain(
      PHONE_TENANT,
    );
    await expectNoSidewaysScroll(page);
    await screenshot(page, 'sessions-390');

    await page.goto(`${app.baseUrl}/console/#/stats?tenant=${PHONE_TENANT}&period=24h`);
    const asked = page.waitForRequest((request) => request.url().includes(`tenant_id=${PHONE_TENANT}`));
    await page.reload();
    const period = new URL((await asked).url()).searchParams;
    const stats = (await app.get<StickinessStats>(`/v1/admin/stats?${period.toString()}`, ADMIN)).body;
    // The handoff and the end skip the router too.
    expect(stats).toMatchObject({ turns: 7, router_calls_avoided: 3, router_calls: 1 });
    expect(stats.decisions.map((d) => d.decision).sort()).toEqual([
      'CONTINUE',
      'END_SESSION',
      'HUMAN_HANDOFF',
      'ROUTE',
    ]);
    // Three avoided router calls at the price of the one made ($2 and $8 per million tokens, 420 and 20 tokens),
    // less the classifier's calls ($0.4 and $1.6 per million, 310 and 14 tokens each).
    const classifierCalls = stats.profiles.find((p) => p.profile === 'route_continuity')?.calls ?? 0;
    const netSaved = (3 * (420 * 2 + 20 * 8)) / 1e6 - (classifierCalls * (310 * 0.4 + 14 * 1.6)) / 1e6;
    // The API keeps a millionth of the currency unit.
    expect(stats.cost.net_saved).toBeCloseTo(netSaved, 6);
    const money = page
      .locator('dl.figures > div')
      .filter({ has: page.locator('dt').getByText('Money saved') });
    await expectVisible(money);
    const [shown, saving] = await money.locator('dd').allTextContents();
    expect(Number(shown.replace(/[$,]/g, ''))).toBe(Number((stats.cost.net_saved ?? 0).toPrecision(3)));
    expect(saving).toMatch(/^\$[\d.]+ on 3 router calls avoided, less \$[\d.]+ for the classifier$/);
    await expectEveryCategoryLabelled(page, stats);
    await expectNoSidewaysScroll(page);
    await screenshot(page, 'stats-390');
  });

  it('says on the sign-in page when authentication is off, and then any key signs in', async () => {
    const open = await startTestApp({ fakeLlm: fake, env: { CHANNEL_API_KEYS: '', ADMIN_API_KEYS: '' } });
    try {
      await page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
      await page.goto(`${open.baseUrl}/console/`);
      await expectVisible(
        page.getByRole('status').filter({ hasText: 'Authentication is off on this server' }),
      );
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'sign-in-authentication-off-390');
      await page.getByLabel('Admin API key').fill('any-key-at-all');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expectVisible(page.getByRole('button', { name: 'Sign out' }));
    } finally {
      // The page's keep-alive connections would hold the server's close until they time out.
      await page.close();
      await open.close();
    }
  });

  it("shows a tenant key only its tenant's sessions", async () => {
    const own = uniqueId('web');
    const foreign = uniqueId('web');
    await say(own, 'Minha fatura veio alta');
    await say(foreign, 'Minha fatura veio alta', OTHER);

    await signIn(TENANT_ADMIN_KEY);
    await expectVisible(page.getByText(`Signed in: tenant ${TENANT}`));
    await expectVisible(sessionRows(own));
    await expect(sessionRows(foreign).count()).resolves.toBe(0);
    const tenants = await page.locator('tbody tr td:nth-child(2)').allTextContents();
    expect(new Set(tenants)).toEqual(new Set([TENANT]));

    // Asking for the other tenant through the URL is refused by the API, and the console says so.
    await page.goto(`${app.baseUrl}/console/#/sessions?tenant=${OTHER}`);
    await expectVisible(page.getByRole('alert').filter({ hasText: '403' }));
    await expect(sessionRows(foreign).count()).resolves.toBe(0);
    await screenshot(page, 'tenant-key-refused-other-tenant');
    // So is the other tenant's conversation, exactly like one that does not exist.
    await page.goto(`${app.baseUrl}/console/#/sessions/${OTHER}/${foreign}`);
    await expectVisible(page.getByRole('alert').filter({ hasText: 'SESSION_NOT_FOUND' }));
    await expect(page.getByRole('article').count()).resolves.toBe(0);
  });
});

async function expectVisible(locator: ReturnType<Page['getByText']>): Promise<void> {
  await locator.first().waitFor({ state: 'visible', timeout: 15_000 });
}

/** The page fits its viewport: nothing makes the reader scroll sideways. */
async function expectNoSidewaysScroll(page: Page): Promise<void> {
  const widths = await page.evaluate<{ page: number; viewport: number }>(
    '({ page: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth })',
  );
  expect(widths.page).toBeLessThanOrEqual(widths.viewport);
}

/** Every category of the category charts is written in its chart (ECharts hides labels it finds crowded). */
async function expectEveryCategoryLabelled(page: Page, stats: StickinessStats): Promise<void> {
  const profiles = stats.profiles.map((p) => p.profile);
  const charts: [string, string[]][] = [
    ['Continuity decisions', [...new Set(stats.decisions.map((d) => d.decision))]],
    ['Tokens by LLM profile', profiles],
    ['Model time per turn by LLM profile (ms)', profiles],
  ];
  for (const [title, categories] of charts) {
    const chart = page.getByRole('figure', { name: title });
    await expectVisible(chart.locator('svg'));
    const labels = await chart.locator('svg text').allTextContents();
    expect({ title, missing: categories.filter((category) => !labels.includes(category)) }).toEqual({
      title,
      missing: [],
    });
  }
}
