/**
 * The viewer in a real headless Chromium (Debian's package, driven by playwright-core): a
 * finished synthesis run, a 2-iteration training run and a tiny study, as a user finds them.
 * Screenshots of every page go to test-artifacts/viewer/ (CI keeps the folder).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { startViewer, type Viewer } from '../../services/viewer/server.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { seedViewerData, viewerScript, type ViewerData } from '../../testkit/viewer-fixture.js';

const CHROMIUM = process.env.MOCKWORLD_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.join(REPO_ROOT, 'test-artifacts', 'viewer');

describe('the viewer in a browser', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let viewer: Viewer;
  let browser: Browser;
  let page: Page;
  let data: ViewerData;
  let dir: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set MOCKWORLD_CHROMIUM)`);
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-viewer-'));
    process.env.MOCKWORLD_HOME = dir;
    await mkdir(SHOTS, { recursive: true });
    db = await createTestDatabase();
    models = await startModelServer({ script: viewerScript });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    data = await seedViewerData({
      databaseUrl: db.url,
      client: tw.client,
      taskQueue: tw.taskQueue,
      modelsUrl: models.url,
      dir,
      nonce: randomBytes(3).toString('hex'),
    });
    viewer = await startViewer({
      databaseUrl: db.url,
      port: 0,
      ui: { url: 'http://localhost:8233', namespace: 'default' },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // A page that asks for anything outside the viewer (a CDN) fails the test.
    page.on('request', (request) => {
      if (!request.url().startsWith(viewer.url) && !request.url().startsWith('data:'))
        throw new Error(`the page fetched ${request.url()}`);
    });
  });
  afterAll(async () => {
    await browser?.close();
    await viewer?.close();
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const charts = async () => {
    await page.waitForFunction(
      "[...document.querySelectorAll('[data-chart]')].every((el) => el.getAttribute('data-rendered'))",
    );
    return page.$$eval('[data-chart]', (els) => els.map((el) => el.getAttribute('data-rendered')));
  };

  it('lists every run with kind, state, progress and its Temporal UI link', async () => {
    await page.goto(viewer.url);
    const rows = page.locator('table.runs tbody tr');
    await expect.poll(() => rows.count()).toBe(3);
    const synthesis = rows.filter({ hasText: data.synthesisRunId });
    await expect.poll(() => synthesis.innerText()).toMatch(/Synthesis\s+completed\s+5\/5 tasks/);
    expect(await rows.filter({ hasText: data.trainingRunId }).innerText()).toMatch(
      /GrpoTraining\s+completed\s+2\/2 iterations/,
    );
    expect(await synthesis.locator('a', { hasText: 'workflow' }).getAttribute('href')).toBe(
      `http://localhost:8233/namespaces/default/workflows/${data.synthesisRunId}`,
    );
    await shot('01-runs');
  });

  it("shows a synthesis run's tasks by stage and rejection reason, and a task's hidden context and tool calls", async () => {
    await page.goto(`${viewer.url}/runs/${data.synthesisRunId}`);
    await page.getByRole('link', { name: /^rejected \(2\)$/ }).click();
    await expect.poll(() => page.locator('table.tasks tbody tr').count()).toBe(2);
    await page.getByRole('link', { name: /^invalid_tools \(1\)$/ }).click();
    expect(await page.locator('table.tasks tbody').innerText()).toMatch(/invalid_tools/);
    await expect.poll(() => page.locator('table.tasks tbody tr').count()).toBe(1);
    await shot('02-synthesis-run-filtered');

    await page.goto(`${viewer.url}/tasks/${data.keptTaskId}`);
    expect(await page.locator('#hidden-context blockquote').innerText()).toBe(
      'For task-0: the record id is R-0.',
    );
    expect(await page.locator('#instruction blockquote').innerText()).toBe('Please sort out task-0 for me.');
    expect(await page.locator('#tools').innerText()).toContain('lookup_record');
    const demo = page.locator('article.demonstration').first();
    const lookup = demo.locator('.tool-call[data-tool="lookup_record"]');
    expect(await lookup.locator('.call').innerText()).toContain('{"id":"R-0"}');
    expect(await lookup.locator('.source').innerText()).toMatch(
      /^(new mapping entry while this episode ran: simulated|from the mapping \(entry existed before this episode\))$/,
    );
    expect(await demo.locator('.tool-call[data-tool="ask_user"] .source').innerText()).toBe('user simulator');
    expect(await demo.locator('.tool-call[data-tool="ask_user"] pre').innerText()).toBe(
      'The record id is R-0.',
    );
    expect(await page.locator('table.mapping tbody tr').count()).toBeGreaterThan(0);
    await shot('03-task');
  });

  it('draws the training curves and shows the rollouts of an iteration with their verdicts', async () => {
    await page.goto(`${viewer.url}/runs/${data.trainingRunId}`);
    const rendered = await charts();
    expect(rendered.every((r) => r === 'true')).toBe(true);
    expect(rendered.length).toBeGreaterThan(8); // the reward and one per metric
    expect(await page.locator('#chart-reward svg.marks').textContent()).toContain('rubric reward');
    expect(await page.locator('#chart-trainer-loss svg.marks').count()).toBe(1);
    // Hovering a point shows its values.
    const point = page.locator('#chart-reward svg.marks g.mark-symbol path').first();
    await point.hover({ force: true });
    await expect
      .poll(() => page.locator('#vg-tooltip-element').innerText())
      .toMatch(/iteration\s+0[\s\S]*reward\s+0\.\d{3}/);
    await shot('04-training-run');

    await page.goto(`${viewer.url}/runs/${data.trainingRunId}/iterations/1`);
    const groups = page.locator('article.group');
    expect(await groups.count()).toBe(2);
    expect(await groups.first().locator('table.rollouts tbody tr').count()).toBe(2);
    expect(await page.locator('.verdict-summary').first().innerText()).toMatch(
      /sub-goals [✓✗]{2} · interactions ✗ · forbidden ✓/,
    );
    await shot('05-iteration');

    await groups.first().locator('a', { hasText: 'r0' }).click();
    const verdicts = page.locator('table.verdict-table tbody');
    expect(await verdicts.innerText()).toContain('The record is found');
    expect(await verdicts.innerText()).toMatch(/sub-goal\s+The record is found\s+✓ achieved/);
    expect(await page.locator('.verdicts h3').innerText()).toMatch(/reward 0\.\d+|reward 0\.000/);
    await shot('06-rollout');
  });

  it("shows a study's grid with cell states and its fit with forecasts", async () => {
    await page.goto(`${viewer.url}/runs/${data.studyId}`);
    expect(await page.locator('table.grid').innerText()).toMatch(/s0: evaluated 29\.\d%/);
    expect(await page.locator('table.grid').innerText()).toContain('s0: training');
    // Above the figures: whether they can be believed (no judge decided anything here).
    const standing = page.locator('#standing');
    expect(await standing.innerText()).toContain('Judge controls: none graded');
    expect(await standing.locator('.warning').first().innerText()).toMatch(
      /^Toy figures\. teacher: embedded/,
    );
    const fit = page.locator('article.fit[data-protocol="rs"]');
    expect(await fit.locator('.law').innerText()).toMatch(/P∞ = 60\.\d\d%/);
    expect(await fit.locator('table.forecasts').innerText()).toMatch(/Carry/);
    await charts();
    expect(await fit.locator('svg.marks').textContent()).toContain('held-out fit');
    await shot('07-study');
  });
});
