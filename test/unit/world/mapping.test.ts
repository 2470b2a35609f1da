import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { getPool } from '../../../activities/store/db.js';
import {
  argsKey,
  canonicalArgs,
  insertIfAbsent,
  resolveToolCall,
  runEpisode,
  type MappingEntry,
  type ToolMappingOptions,
} from '../../../activities/world/index.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import {
  agentTurns,
  answeredCalls,
  episodeInput,
  episodeRow,
  INSTRUCTION,
  insertTask,
  numberingSimulator,
  query,
  roleOn,
  TOOLS,
} from './fixtures.js';

const [GET_ORDER, SEARCH] = TOOLS as [(typeof TOOLS)[0], (typeof TOOLS)[0]];

describe('the per-task tool mapping', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_world_map'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 10 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.setScript(undefined);
    server.setLatency(0);
    server.resetStats();
  });

  const options = (model: string, extra: Partial<ToolMappingOptions> = {}): ToolMappingOptions => ({
    pool: getPool(db.url),
    models,
    role: roleOn(server.url, model),
    templates: { version: 'v1', overrides: {} },
    runId: 'run-map',
    ...extra,
  });

  const entry = (
    taskId: string,
    tool: string,
    args: Record<string, unknown>,
    response: unknown,
  ): MappingEntry => ({
    taskId,
    tool,
    argsKey: argsKey(args),
    args,
    response,
    source: 'simulated',
    equivalentTo: null,
  });

  it('answers an exact mapping hit without any model call, whatever the key order', async () => {
    await insertTask(db.url, 'map-exact');
    const stored = { status: 'shipped', items: ['lamp'] };
    await insertIfAbsent(
      getPool(db.url),
      entry('map-exact', 'get_order', { orderId: 'A', includeItems: true }, stored),
    );

    const direct = await resolveToolCall(
      options('m-exact'),
      { taskId: 'map-exact', instruction: INSTRUCTION },
      GET_ORDER,
      { includeItems: true, orderId: 'A' },
    );
    expect(direct).toMatchObject({ exactHit: true, entry: { response: stored, source: 'simulated' } });

    server.setScript([
      {
        role: 'policy',
        reply: agentTurns(
          { toolCalls: [{ name: 'get_order', arguments: '{ "includeItems": true, "orderId": "A" }' }] },
          'Your order has shipped.',
        ),
      },
    ]);
    await runEpisode({ pool: getPool(db.url), models }, episodeInput(server.url, 'm-exact', 'map-exact'));
    const row = await episodeRow(db.url, 'map-exact/rollout-0');
    expect(answeredCalls(row!.messages)).toEqual([
      expect.objectContaining({ name: 'get_order', answer: canonicalArgs(stored) }),
    ]);
    expect(server.requestCount('tool-simulator')).toBe(0);
    expect(server.requestCount('policy')).toBe(2);
  });

  it('reuses the response of an entry the simulator judges equivalent and records where it came from', async () => {
    await insertTask(db.url, 'map-equivalent');
    const original = entry('map-equivalent', 'search_products', { query: 'desk lamp' }, { results: ['L-1'] });
    await insertIfAbsent(getPool(db.url), original);
    server.setScript([{ role: 'tool-simulator', reply: JSON.stringify({ equivalentTo: 0, response: '' }) }]);

    const resolved = await resolveToolCall(
      options('m-equivalent'),
      { taskId: 'map-equivalent', instruction: INSTRUCTION },
      SEARCH,
      { query: 'Desk Lamp' },
    );
    expect(resolved).toMatchObject({
      exactHit: false,
      entry: { response: { results: ['L-1'] }, source: 'equivalent', equivalentTo: original.argsKey },
    });
    const [request] = server.requests;
    const prompt = JSON.stringify(request!.body.messages);
    // The simulator saw the tool's spec, the existing entry and the new call.
    expect(prompt).toContain('Search the product catalogue by keywords.');
    expect(prompt).toContain(JSON.stringify(canonicalArgs({ query: 'desk lamp' })).slice(1, -1));
    expect(prompt).toContain(JSON.stringify(canonicalArgs({ query: 'Desk Lamp' })).slice(1, -1));
    const rows = await query(
      db.url,
      `SELECT source, equivalent_to FROM tool_mappings WHERE task_id = 'map-equivalent'`,
    );
    expect(rows).toHaveLength(2);
  });

  it('shows the simulator only the newest entries of the called tool', async () => {
    await insertTask(db.url, 'map-bounded');
    for (let i = 0; i < 5; i++) {
      await insertIfAbsent(
        getPool(db.url),
        entry('map-bounded', 'search_products', { query: `q-${i}` }, { i }),
      );
    }
    await insertIfAbsent(getPool(db.url), entry('map-bounded', 'get_order', { orderId: 'other-tool' }, {}));
    server.setScript([{ role: 'tool-simulator', reply: numberingSimulator() }]);
    await resolveToolCall(
      options('m-bounded', { shownEntries: 3 }),
      { taskId: 'map-bounded', instruction: INSTRUCTION },
      SEARCH,
      { query: 'q-new' },
    );
    const prompt = JSON.stringify(server.requests[0]!.body.messages);
    expect(prompt).not.toContain('q-0');
    expect(prompt).not.toContain('q-1');
    expect(prompt).toContain('q-2');
    expect(prompt).toContain('q-4');
    expect(prompt).not.toContain('other-tool');
  });

  it('draws the simulator again with another sample when its answer is rejected after repair', async () => {
    await insertTask(db.url, 'map-redraw');
    server.setScript([{ role: 'tool-simulator', reply: numberingSimulator() }]);
    server.injectFaults(
      { kind: 'schema-invalid', role: 'tool-simulator' },
      { kind: 'schema-invalid', role: 'tool-simulator' },
    );
    const resolved = await resolveToolCall(
      options('m-redraw'),
      { taskId: 'map-redraw', instruction: INSTRUCTION },
      GET_ORDER,
      { orderId: 'Z' },
    );
    expect(resolved.entry).toMatchObject({ response: { n: 0 }, source: 'simulated' });
    // First answer, its repair, then sample 1.
    expect(server.requestCount('tool-simulator')).toBe(3);
    expect(server.requests.map((r) => r.body.seed)).toEqual([0, 0, 1]);
    const rejections = await query(
      db.url,
      `SELECT role FROM llm_rejections WHERE schema_name = 'ToolSimulation'`,
    );
    expect(rejections).toEqual([{ role: 'tool-simulator' }]);
  });

  it('keeps the first writer’s response when writers from several processes insert the same call', async () => {
    await insertTask(db.url, 'map-race');
    // Two pools stand in for two worker processes: no shared memory, only the database.
    const pools = [new pg.Pool({ connectionString: db.url }), new pg.Pool({ connectionString: db.url })];
    try {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          insertIfAbsent(pools[i % 2]!, entry('map-race', 'get_order', { orderId: 'R' }, { writer: i })),
        ),
      );
      expect(results.filter((r) => r.inserted)).toHaveLength(1);
      const winner = results.find((r) => r.inserted)!.entry.response;
      for (const r of results) expect(r.entry.response).toEqual(winner);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('gives 16 concurrent rollouts identical responses for identical calls, one simulation per distinct call', async () => {
    await insertTask(db.url, 'map-group');
    const orders = ['A', 'B'];
    const queries = ['lamp', 'desk', 'chair'];
    server.setScript([
      {
        role: 'policy',
        reply: agentTurns(
          ({ body }) => ({
            toolCalls: [
              { name: 'get_order', arguments: { orderId: orders[body.seed! % 2] } },
              { name: 'search_products', arguments: { query: queries[body.seed! % 3] } },
            ],
          }),
          ({ body }) => ({
            // The same calls in every rollout, keys in a different order in half of them.
            toolCalls:
              body.seed! % 2
                ? [
                    { name: 'get_order', arguments: '{"includeItems":true,"orderId":"A"}' },
                    { name: 'search_products', arguments: '{"query":"lamp","limit":5}' },
                  ]
                : [
                    { name: 'get_order', arguments: '{"orderId": "A", "includeItems": true}' },
                    { name: 'search_products', arguments: '{"limit": 5, "query": "lamp"}' },
                  ],
          }),
          'All done.',
        ),
      },
      // Slow enough that rollouts asking the same thing overlap in flight.
      { role: 'tool-simulator', reply: numberingSimulator(), latencyMs: 40 },
    ]);

    const summaries = await Promise.all(
      Array.from({ length: 16 }, (_, sampleIndex) =>
        runEpisode(
          { pool: getPool(db.url), models },
          episodeInput(server.url, 'm-group', 'map-group', { sampleIndex }),
        ),
      ),
    );
    expect(summaries.every((s) => s.endReason === 'final_answer' && s.toolCalls === 4)).toBe(true);

    const seen = new Map<string, Set<string>>();
    for (const summary of summaries) {
      const row = await episodeRow(db.url, summary.episodeId);
      for (const call of answeredCalls(row!.messages)) {
        const key = `${call.name} ${canonicalArgs(JSON.parse(call.arguments))}`;
        seen.set(key, (seen.get(key) ?? new Set()).add(call.answer!));
      }
    }
    expect(seen.size).toBe(7); // get_order A, B, A+items; search lamp, desk, chair, lamp+limit
    for (const [call, answers] of seen) expect([call, answers.size]).toEqual([call, 1]);

    const duplicates = await query(
      db.url,
      `SELECT tool, args_key FROM tool_mappings WHERE task_id = 'map-group'
        GROUP BY tool, args_key HAVING count(*) > 1`,
    );
    expect(duplicates).toEqual([]);
    const [{ count }] = (await query<{ count: number }>(
      db.url,
      `SELECT count(*)::int AS count FROM tool_mappings WHERE task_id = 'map-group'`,
    )) as [{ count: number }];
    expect(count).toBe(7);
    expect(server.requestCount('tool-simulator')).toBeLessThanOrEqual(7);
    expect(server.requestCount('tool-simulator')).toBe(count);
  });
});
