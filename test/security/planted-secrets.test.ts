/**
 * A password planted in every URL mockworld takes must come out nowhere: not in an error's
 * message or fields, not in what the CLI prints, not in the crash dump of a worker whose database
 * is down. URLs whose credentials would be stored (a spec's endpoint, which Temporal keeps in the
 * run's history) are refused, naming the field, without echoing the value.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { inspect, promisify } from 'node:util';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { PolicyServingSchema } from '../../schemas/policy-serving.js';
import { SearchBackendSchema } from '../../schemas/reasoning-search.js';
import { parseSpec } from '../../schemas/specs.js';
import { runCli } from '../../testkit/cli.js';
import { MockworldPlugin } from '../../workers/plugin.js';

const PLANTED = 'PLANTED-s3cr3t-7f2c';
/** Nothing listens on port 1: every connection is refused, so each path reports its failure. */
const DATABASE_URL = `postgres://mockworld:${PLANTED}@127.0.0.1:1/mockworld`;

function everything(value: unknown): string {
  return value instanceof Error
    ? `${value.message}\n${value.stack}\n${inspect(value, { depth: 8, showHidden: true })}`
    : inspect(value, { depth: 8 });
}

describe('a password planted in every URL', () => {
  let native: NativeConnection;
  beforeAll(async () => {
    native = await NativeConnection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await native?.close();
  });

  it('is refused in a spec endpoint and in the model URLs, and the refusal does not repeat it', () => {
    const spec = {
      kind: 'Smoke',
      model: { endpoint: { baseUrl: `http://user:${PLANTED}@gpu-1:8000/v1`, model: 'm' } },
    };
    const refusal = (() => {
      try {
        parseSpec(spec);
      } catch (error) {
        return error;
      }
    })();
    expect(everything(refusal)).toMatch(
      /model\.endpoint\.baseUrl: baseUrl must not carry a key or a user:password/,
    );
    expect(everything(refusal)).not.toContain(PLANTED);
    for (const name of [
      'MOCKWORLD_MODEL_URL',
      'MOCKWORLD_MODEL_GATEWAY_URL',
      'MOCKWORLD_VIEWER_URL',
      'MOCKWORLD_TEMPORAL_UI_URL',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ]) {
      const error = (() => {
        try {
          loadEnvironment({ [name]: `http://user:${PLANTED}@gpu-1:8000/v1` });
        } catch (e) {
          return e;
        }
      })();
      expect(everything(error)).toMatch(new RegExp(`${name}: must not carry (a key or )?(a )?user:password`));
      expect(everything(error)).not.toContain(PLANTED);
    }
  });

  it('is refused in every other URL a spec takes, and in a key in the query, naming the field', () => {
    const refusal = (document: unknown) => {
      try {
        parseSpec(document);
      } catch (error) {
        return everything(error);
      }
      throw new Error('accepted');
    };
    const withUser = `http://user:${PLANTED}@gpu-1:8000/v1`;
    const withKey = `http://gpu-1:8000/v1?api_key=${PLANTED}`;
    for (const url of [withUser, withKey]) {
      const checkpoint = refusal({
        kind: 'Evaluation',
        policy: { checkpoint: { runId: 'grpo-1', step: 1, server: { baseUrl: url } } },
      });
      expect(checkpoint).toContain(
        'policy.checkpoint.server.baseUrl: must not carry a key or a user:password',
      );
      const search = SearchBackendSchema.safeParse({ kind: 'http', url, apiKeyEnv: 'SEARCH_API_KEY' });
      const replicas = PolicyServingSchema.safeParse({ engine: 'vllm', replicas: [url] });
      expect(search.error?.issues).toEqual([expect.objectContaining({ path: ['url'] })]);
      expect(replicas.error?.issues).toEqual([expect.objectContaining({ path: ['replicas', 0] })]);
      for (const text of [checkpoint, everything(search.error), everything(replicas.error)])
        expect(text).not.toContain(PLANTED);
    }
  });

  it("is not in a worker's start-up failure when its database is down: message, fields, inspected form", async () => {
    const worker = await Worker.create({
      // Its own connection: a worker refused before it polls keeps a reference to it.
      connection: await NativeConnection.connect({ address: inject('temporalAddress') }),
      taskQueue: `planted-${process.pid}`,
      plugins: [new MockworldPlugin({ databaseUrl: DATABASE_URL })],
    });
    const failure = await worker.run().catch((error: unknown) => error);
    expect(everything(failure)).toMatch(
      /PostgreSQL is not reachable at postgres:\/\/mockworld:\*\*\*@127\.0\.0\.1:1/,
    );
    expect(everything(failure)).not.toContain(PLANTED);
  });

  it("is not in a worker process's crash dump (the error left uncaught)", async () => {
    // A file, not --eval: the SDK's workflow thread inherits the process's exec arguments.
    const script = path.join(REPO_ROOT, 'test-artifacts', `planted-crash-${process.pid}.ts`);
    await mkdir(path.dirname(script), { recursive: true });
    await writeFile(
      script,
      `import { NativeConnection, Worker } from '@temporalio/worker';
import { MockworldPlugin } from '../workers/plugin.ts';
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });
const worker = await Worker.create({ connection, taskQueue: 'planted-crash', plugins: [new MockworldPlugin()] });
await worker.run();
`,
    );
    const crashed = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL, TEMPORAL_ADDRESS: inject('temporalAddress') },
    }).then(
      () => ({ code: 0, stderr: '', stdout: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    await rm(script, { force: true });
    expect(crashed.code).not.toBe(0);
    expect(crashed.stderr).toContain('DatabaseUnreachableError');
    expect(crashed.stdout + crashed.stderr).not.toContain(PLANTED);
  });

  it('is not in what the CLI prints when the database is down', async () => {
    const env = { DATABASE_URL, TEMPORAL_ADDRESS: inject('temporalAddress') };
    for (const args of [
      ['report', 'no-such-run'],
      ['export', 'no-such-run'],
      ['import', 'examples/grpo/tasks.jsonl'],
    ]) {
      const result = await runCli(env, ...args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stdout + result.stderr, args.join(' ')).not.toContain(PLANTED);
      expect(result.stderr, args.join(' ')).toContain(
        'PostgreSQL is not reachable at postgres://mockworld:***@',
      );
    }
  });
});
