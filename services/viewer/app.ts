/**
 * The viewer's routes (hono): read-only pages over PostgreSQL. Nothing here reads the process
 * environment or the spec's secrets: specs hold only the names of key variables, and the viewer
 * is handed its database and UI location, never the environment.
 */
import type { JudgeStanding } from '../../schemas/judge-controls.js';
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type pg from 'pg';
import { readIterationMetrics } from '../../activities/training/metrics.js';
import { episodePrefix } from '../../activities/training/episode-ids.js';
import { TOKEN_COOKIE, tokenCheck } from './access.js';
import { readAsset } from './assets.js';
import { episodesByPrefix, findEpisode, taskEpisodes } from './episode-queries.js';
import { evaluationPage } from './evaluation-page.js';
import { evaluationResults } from './evaluation-queries.js';
import { html, json, page, section, seg } from './html.js';
import { runHeader, runsPage, usageSection, type TemporalUi } from './runs-page.js';
import { findRun, listRuns, usageByRole } from './runs-queries.js';
import { studyPage } from './study-page.js';
import { studyAnalyses, studyCells } from './study-queries.js';
import { studyJudgeStanding } from '../../activities/study/judge-standing.js';
import { coverageJudgeStanding } from '../../activities/synthesis/coverage-controls.js';
import { queryRolesAnsweredBy } from '../../activities/llm/call-store.js';
import { EMBEDDED_MODEL_NAME } from '../../activities/llm/default-endpoint.js';
import { synthesisRunPage, taskPage } from './synthesis-pages.js';
import { findTask, listTasks, taskFacets, taskMapping } from './synthesis-queries.js';
import { iterationPage, trainingRunPage } from './training-pages.js';
import { transcript } from './transcript.js';

/** What the app needs: the read-only pool, the Temporal UI, the token (absent: loopback only). */
export interface ViewerAppOptions {
  readonly pool: pg.Pool;
  readonly ui: TemporalUi;
  readonly token?: string;
}

/** Pages may load only the viewer's own scripts; nothing is fetched from elsewhere. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

export function createViewerApp({ pool, ui, token }: ViewerAppOptions): Hono {
  const app = new Hono();
  const authorized = tokenCheck(token);

  // The probe of a cluster's kubelet or compose, which has no token: answers only whether the
  // database is reachable, before the token check, and serves no data.
  app.get('/health', async (c) => {
    try {
      await pool.query('SELECT 1');
      return c.text('ok');
    } catch {
      return c.text('database unreachable', 503);
    }
  });

  app.use('*', async (c, next) => {
    const fromQuery = c.req.query('token');
    const bearer = c.req.header('authorization')?.replace(/^Bearer\s+/i, '');
    const presented = fromQuery ?? bearer ?? getCookie(c, TOKEN_COOKIE);
    if (!authorized(presented))
      return c.text('this viewer needs its token: open the link with ?token=<MOCKWORLD_VIEWER_TOKEN>', 401);
    if (token !== undefined && fromQuery !== undefined) {
      setCookie(c, TOKEN_COOKIE, fromQuery, { httpOnly: true, sameSite: 'Strict', path: '/' });
    }
    await next();
    c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
  });
  app.on(['POST', 'PUT', 'PATCH', 'DELETE'], '*', (c) => c.text('the viewer is read-only', 405));

  app.get('/assets/:name', async (c) => {
    const asset = await readAsset(c.req.param('name'));
    if (!asset) return c.notFound();
    return c.body(asset.body, 200, { 'Content-Type': asset.type, 'Cache-Control': 'max-age=3600' });
  });

  app.get('/', async (c) => c.html(await runsPage(await listRuns(pool), ui)));

  app.get('/runs/:id', async (c) => {
    const found = await findRun(pool, c.req.param('id'));
    if (!found) return c.html(await page('Not found', [], html`<p>No run ${c.req.param('id')}.</p>`), 404);
    // A study names its toy roles in its own standing section; every other page in its header.
    const run =
      found.kind === 'ScalingStudy'
        ? found
        : { ...found, toyRoles: await queryRolesAnsweredBy(pool, found.runId, EMBEDDED_MODEL_NAME) };
    const usage = await usageByRole(pool, run.runId);
    switch (run.kind) {
      case 'Synthesis': {
        const after = c.req.query('after');
        const filter = {
          stage: c.req.query('stage') || undefined,
          reason: c.req.query('reason') || undefined,
          after: after && /^\d+$/.test(after) ? Number(after) : undefined,
        };
        const [tasks, facets, judge] = await Promise.all([
          listTasks(pool, run.runId, filter),
          taskFacets(pool, run.runId),
          coverageJudgeStanding(pool, run.runId),
        ]);
        return c.html(await synthesisRunPage({ run: { ...run, judge }, ui, tasks, facets, filter, usage }));
      }
      case 'GrpoTraining': {
        const iterations = await readIterationMetrics(pool, run.runId);
        const judge = iterations.at(-1)?.metrics.judge as JudgeStanding | undefined;
        return c.html(await trainingRunPage({ run: { ...run, judge }, ui, iterations, usage }));
      }
      case 'ScalingStudy': {
        const [cells, { analyses, samplesPerQuestion }, standing] = await Promise.all([
          studyCells(pool, run.runId),
          studyAnalyses(pool, run.runId),
          studyJudgeStanding(pool, run.runId),
        ]);
        return c.html(await studyPage({ run, ui, cells, analyses, samplesPerQuestion, standing, usage }));
      }
      case 'Evaluation': {
        const judge = (run.summary as { judge?: JudgeStanding } | null)?.judge;
        const results = await evaluationResults(pool, run.runId);
        return c.html(await evaluationPage({ run: { ...run, judge }, ui, results, usage }));
      }
      default:
        return c.html(
          await page(
            run.runId,
            [{ label: run.runId }],
            html`${runHeader(run, ui)} ${section('Summary', json(run.summary))} ${usageSection(usage)}`,
          ),
        );
    }
  });

  app.get('/runs/:id/iterations/:iteration', async (c) => {
    const runId = c.req.param('id');
    const iteration = Number(c.req.param('iteration'));
    if (!Number.isInteger(iteration) || iteration < 0) return c.text('iteration must be a whole number', 400);
    const [metrics, rollouts] = await Promise.all([
      readIterationMetrics(pool, runId),
      episodesByPrefix(pool, episodePrefix(runId, iteration, 'rollout'), 'rollout'),
    ]);
    return c.html(
      await iterationPage({
        runId,
        iteration,
        metrics: metrics.find((m) => m.iteration === iteration),
        rollouts,
      }),
    );
  });

  app.get('/tasks/:id', async (c) => {
    const task = await findTask(pool, c.req.param('id'));
    if (!task) return c.html(await page('Not found', [], html`<p>No task ${c.req.param('id')}.</p>`), 404);
    const [demonstrations, mapping] = await Promise.all([
      taskEpisodes(pool, task.taskId, 'demonstration'),
      taskMapping(pool, task.taskId),
    ]);
    return c.html(await taskPage(task, demonstrations, mapping));
  });

  app.get('/episodes/:id{.+}', async (c) => {
    const episode = await findEpisode(pool, c.req.param('id'));
    if (!episode)
      return c.html(await page('Not found', [], html`<p>No episode ${c.req.param('id')}.</p>`), 404);
    const [task, mapping] = await Promise.all([
      findTask(pool, episode.taskId),
      taskMapping(pool, episode.taskId),
    ]);
    const runId = episode.episodeId.split('/')[0]!;
    return c.html(
      await page(
        `Episode ${episode.episodeId}`,
        [
          { label: runId, href: `/runs/${seg(runId)}` },
          { label: episode.taskId, href: `/tasks/${seg(episode.taskId)}` },
          { label: `${episode.purpose} ${episode.sampleIndex}` },
        ],
        html`${task ? html`<p class="meta">instruction: ${task.instruction ?? '—'}</p>` : ''}
        ${transcript(episode, mapping, task?.rubric)}`,
      ),
    );
  });

  app.onError((error, c) => {
    console.error(`viewer: ${c.req.method} ${c.req.path}: ${error instanceof Error ? error.stack : error}`);
    return c.text('the viewer could not read this page (see the viewer log)', 500);
  });
  return app;
}
