import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../support/browser';
import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

// Tenants of their own, so listings are exact even when other suites share the database.
const TENANT = `con${Date.now().toString(36)}`;
const OTHER = `${TENANT}-other`;
const STATS_TENANT = `${TENANT}-stats`;
const ADMIN_KEY = 'console-admin-global';
const TENANT_ADMIN_KEY = 'console-admin-tenant';
const CHANNEL = { authorization: 'Bearer console-channel' };
const CHANNEL_OTHER = { authorization: 'Bearer console-channel-other' };
const CHANNEL_STATS = { authorization: 'Bearer console-channel-stats' };

/** Booting the app with a fresh embedded PGlite can take minutes on a busy machine. */
const APP_START_TIMEOUT_MS = 240_000;

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
        CHANNEL_API_KEYS: `${TENANT}:console-channel,${OTHER}:console-channel-other,${STATS_TENANT}:console-channel-stats`,
        ADMIN_API_KEYS: `${ADMIN_KEY},${TENANT}:${TENANT_ADMIN_KEY}`,
        HUMAN_HANDOFF_MODE: 'hold',
        ENABLE_ROUTE_STICKINESS: 'true',
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
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'e o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
      'talvez a fatura': { decision: 'CONTINUE', confidence: 0.4 },
      'quero falar com uma pessoa': { decision: 'HUMAN_HANDOFF', confidence: 0.99 },
    });
    page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
  });

  afterEach(async () => {
    await page?.close();
  });

  const say = async (sessionId: string, text: string, tenant = TENANT) => {
    const channel = { [TENANT]: CHANNEL, [OTHER]: CHANNEL_OTHER, [STATS_TENANT]: CHANNEL_STATS }[tenant];
    const res = await app.post(
      '/v1/channels/web/messages',
      { tenant_id: tenant, agent_id: 'telecom_contas', session_id: sessionId, text, user_id: 'user-1' },
      channel,
    );
    expect(res.status).toBe(200);
    return res.body;
  };

  const signIn = async (key: string) => {
    await page.goto(`${app.baseUrl}/console/`);
    await page.getByLabel('Admin API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  const sessionRows = (sessionId: string) => page.getByRole('rowheader', { name: sessionId });

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
    await expectVisible(page.getByText('Signed in: all tenants'));
    await page.getByLabel('Tenant').fill(TENANT);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expectVisible(sessionRows(first));
    await expectVisible(sessionRows(second));
    expect(await page.locator('tbody tr').count()).toBe(2);
    expect(page.url()).toContain(`tenant=${TENANT}`);
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

  it('opens a timeline with the continuity decision and route of each turn, and marks operator actions', async () => {
    const id = uniqueId('web');
    for (const text of ['Qual é o meu plano?', 'e o que está incluso?', 'talvez a fatura']) {
      await say(id, text);
    }

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
    expect(await text(3)).toContain('billing_agent');
    expect(await text(3)).toContain(
      'CONTINUE at 40.0 %, overruled — fallback: confidence below the threshold',
    );
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
    await say(id, 'Qual é o meu plano?');
    expect(await say(id, 'quero falar com uma pessoa')).toMatchObject({ session_control: 'HUMAN_HANDOFF' });
    expect(await say(id, 'alô? tem alguém aí?')).toMatchObject({ blocked: true });

    await signIn(ADMIN_KEY);
    await page.getByRole('link', { name: 'Handoff desk' }).click();
    await page.getByLabel('Tenant').fill(TENANT);
    await page.getByRole('button', { name: 'Show' }).click();
    const card = page.getByRole('article', { name: new RegExp(`^${id}, waiting \\d+ s$`) });
    await expectVisible(card);
    const summary = (await card.textContent()) ?? '';
    expect(summary).toContain('user-1 · web');
    expect(summary).toContain('customer');
    expect(summary).toContain('quero falar com uma pessoa');
    expect(summary).toMatch(/Messages held since\s*1/);
    expect(summary).toMatch(/Taken by\s*nobody yet/);
    await screenshot(page, 'handoff-desk');

    // Claiming names who took it (the key's id); someone else's claim is then refused.
    await card.getByRole('button', { name: 'Claim' }).click();
    await expectVisible(card.getByRole('button', { name: 'Claimed' }));
    expect(await card.getByRole('button', { name: 'Claimed' }).isDisabled()).toBe(true);
    expect(await card.textContent()).toMatch(/Taken by\s*key:[0-9a-f]+ at /);
    const stolen = await app.post(
      `/v1/admin/sessions/${id}/claim?tenant_id=${TENANT}`,
      { operator: 'someone else' },
      { authorization: `Bearer ${ADMIN_KEY}` },
    );
    expect(stolen.status).toBe(409);
    expect(stolen.body).toMatchObject({ error: { code: 'HANDOFF_CLAIMED' } });

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

  it('charts stickiness and cost over a period', async () => {
    const id = uniqueId('web');
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
    await page.getByLabel('Tenant').fill(STATS_TENANT);
    await page.getByLabel('Period', { exact: true }).selectOption('24h');
    await page.getByRole('button', { name: 'Show' }).click();
    const figure = (name: string) => page.locator('dl.figures > div').filter({ hasText: name });
    await expectVisible(page.getByText(`Tenant ${STATS_TENANT}`));
    expect(await figure('Turns').locator('dd').first().textContent()).toBe('4');
    expect(await figure('Bypass rate').locator('dd').first().textContent()).toBe('50.0 %');
    expect(await figure('Router calls avoided').locator('dd').first().textContent()).toBe('2');
    for (const title of [
      'Turns over time',
      'Continuity decisions',
      'Fallback reasons',
      'Tokens by LLM profile',
    ]) {
      const chart = page.getByRole('figure', { name: title });
      await expectVisible(chart.locator('svg'));
    }
    // The figures behind a chart, as a table for those who do not read charts.
    const fallbacks = page.getByRole('figure', { name: 'Fallback reasons' });
    await fallbacks.getByText('Data of “Fallback reasons”').click();
    await expectVisible(fallbacks.getByRole('cell', { name: 'below the threshold' }));
    expect(page.url()).toContain('period=24h');
    await screenshot(page, 'stats');
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
