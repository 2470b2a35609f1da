import { afterEach, describe, expect, it } from 'vitest';
import { roleOf, startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { eventually } from '../../../testkit/temporal.js';

const post = (server: ModelServer, path: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
    signal,
  });

const chatBody = (role: string, text: string) => ({
  model: 'mock-model',
  messages: [
    { role: 'system', content: `You are helpful.\nrole: ${role}` },
    { role: 'user', content: text },
  ],
});

describe('the test model server', () => {
  let server: ModelServer | undefined;
  afterEach(async () => server?.close());

  it('finds the role in request metadata or in a role line of the system message', () => {
    expect(roleOf({ model: 'm', messages: [{ role: 'system', content: 'Be brief.\nrole: judge\n' }] })).toBe(
      'judge',
    );
    expect(
      roleOf({
        model: 'm',
        messages: [{ role: 'system', content: 'role: judge' }],
        metadata: { role: 'teacher' },
      }),
    ).toBe('teacher');
    expect(roleOf({ model: 'm', messages: [{ role: 'user', content: 'role: judge' }] })).toBeUndefined();
  });

  it('answers by the first matching rule and counts requests per role', async () => {
    server = await startModelServer({
      script: [
        { role: 'judge', when: (r) => r.roleIndex === 0, reply: 'first verdict' },
        { role: 'judge', reply: (r) => `verdict ${r.roleIndex}` },
      ],
    });
    const texts = [];
    for (const role of ['judge', 'judge', 'user-sim']) {
      const json = (await (await post(server, '/chat/completions', chatBody(role, 'hello'))).json()) as {
        choices: [{ message: { content: string } }];
        usage: { prompt_tokens: number; completion_tokens: number };
      };
      texts.push(json.choices[0].message.content);
      expect(json.usage.prompt_tokens).toBeGreaterThan(0);
    }
    expect(texts).toEqual(['first verdict', 'verdict 1', 'echo: hello']);
    expect(server.stats.byRole).toEqual({ judge: 2, 'user-sim': 1 });
    expect(server.requestCount()).toBe(3);
    expect(server.requestCount('judge')).toBe(2);
  });

  it('lists its models and returns deterministic unit embeddings', async () => {
    server = await startModelServer({ models: ['a', 'b'] });
    const models = (await (await fetch(`${server.url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['a', 'b']);
    const embed = async (input: string[]) =>
      (
        (await (await post(server!, '/embeddings', { model: 'e', input, dimensions: 16 })).json()) as {
          data: { embedding: number[] }[];
        }
      ).data.map((d) => d.embedding);
    const [x, y] = await embed(['same text', 'other text']);
    const [x2] = await embed(['same text']);
    expect(x).toEqual(x2);
    expect(x).toHaveLength(16);
    expect(x).not.toEqual(y);
    expect(Math.hypot(...x!)).toBeCloseTo(1, 6);
  });

  it('draws the same faults from the same seed', async () => {
    const run = async () => {
      const s = await startModelServer();
      s.setRandomFaults({ probability: 0.5, kinds: ['server-error', 'schema-invalid'], seed: 3 });
      const statuses = [];
      for (let i = 0; i < 20; i++)
        statuses.push((await post(s, '/chat/completions', chatBody('x', `q${i}`))).status);
      const faults = s.requests.map((r) => r.fault ?? '-');
      await s.close();
      return { statuses, faults };
    };
    const [a, b] = [await run(), await run()];
    expect(a).toEqual(b);
    expect(new Set(a.faults).size).toBe(3);
  });

  it('ends hung requests when it closes', async () => {
    server = await startModelServer();
    server.injectFaults({ kind: 'hang' });
    const pending = post(server, '/chat/completions', chatBody('x', 'hang')).then(
      () => 'answered',
      () => 'failed',
    );
    await eventually(async () => server!.stats.inFlight === 1, 10_000, 10);
    await server.close();
    server = undefined;
    expect(await pending).toBe('failed'); // ended by the close, not left hanging: the test would time out
  });
});
