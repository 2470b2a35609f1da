import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { startCodecServer, type CodecServer } from '../../services/codec/codec-server.js';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  keyIdOf,
  PayloadDecryptionError,
  payloadCodecFromEnvironment,
  withPayloadCodec,
} from '../../services/codec/payload-codec.js';
import { connectClient } from '../../client/connect.js';
import { MockworldPlugin } from '../../workers/plugin.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { freePort } from '../../testkit/ports.js';
import { sampleValue, scrape } from '../../testkit/prometheus.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';

const newKey = () => randomBytes(32);
const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const jsonPayload = (value: unknown): Payload => ({
  metadata: { encoding: utf8('json/plain') },
  data: utf8(JSON.stringify(value)),
});
/** Payloads as the remote codec protocol (and the Temporal UI) sends them: protobuf JSON, bytes in base64. */
const toWire = (payloads: Payload[]) => ({
  payloads: payloads.map((p) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? []).toString('base64'),
  })),
});
/** The body of a codec answer. */
type Wire = { payloads: Array<{ metadata: Record<string, string>; data: string }> };
const fromWire = (body: Wire): Payload[] =>
  body.payloads.map((p) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
    ),
    data: new Uint8Array(Buffer.from(p.data, 'base64')),
  }));

describe('wiring from the environment', () => {
  it('puts the codec into the plugin (worker and client) and the CLI client only when MOCKWORLD_PAYLOAD_KEY is set', async () => {
    // First in this file, before anything reads (and caches) the process environment.
    const key = newKey();
    process.env.MOCKWORLD_PAYLOAD_KEY = key.toString('base64');
    process.env.TEMPORAL_ADDRESS = inject('temporalAddress');
    try {
      const codecsOf = (options: { dataConverter?: { payloadCodecs?: PayloadCodec[] } }) =>
        (options.dataConverter?.payloadCodecs ?? []).map((c) => (c as AesGcmPayloadCodec).keyId);
      const databaseUrl = 'postgres://postgres@127.0.0.1:5432/unused';
      const fromEnv = new MockworldPlugin({ databaseUrl });
      expect(codecsOf(fromEnv.configureClient({}))).toEqual([keyIdOf(key)]);
      expect(codecsOf(fromEnv.configureWorker({ taskQueue: 'q' }))).toEqual([keyIdOf(key)]);
      expect(codecsOf(new MockworldPlugin({ databaseUrl, payloadCodec: null }).configureClient({}))).toEqual(
        [],
      );
      const client = await connectClient();
      try {
        expect(
          client.options.loadedDataConverter.payloadCodecs.map((c) => (c as AesGcmPayloadCodec).keyId),
        ).toEqual([keyIdOf(key)]);
      } finally {
        await client.connection.close();
      }
    } finally {
      delete process.env.MOCKWORLD_PAYLOAD_KEY;
    }
  });
});

describe('the AES-256-GCM payload codec', () => {
  it('round-trips payloads of any size, each under a fresh IV, naming the key and nothing of the plaintext', async () => {
    const codec = new AesGcmPayloadCodec(newKey());
    const originals: Payload[] = [
      jsonPayload({ kind: 'Smoke', prompt: 'the plaintext marker' }),
      { metadata: { encoding: utf8('binary/null') } },
      {
        metadata: { encoding: utf8('binary/plain'), 'custom-key': utf8('v') },
        data: new Uint8Array(randomBytes(1024 * 1024)),
      },
    ];
    const encoded = await codec.encode(originals);
    expect(encoded).toHaveLength(3);
    for (const payload of encoded) {
      expect(text(payload.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
      expect(text(payload.metadata?.[KEY_ID_METADATA])).toBe(codec.keyId);
      expect(Object.keys(payload.metadata ?? {}).sort()).toEqual([
        'encoding',
        'encryption-cipher',
        'encryption-key-id',
      ]);
    }
    expect(Buffer.from(encoded[0]!.data!).includes('plaintext marker')).toBe(false);
    const decoded = await codec.decode(encoded);
    expect(
      decoded.map((p) => [text(p.metadata?.encoding), Buffer.from(p.data ?? []).toString('hex')]),
    ).toEqual(originals.map((p) => [text(p.metadata?.encoding), Buffer.from(p.data ?? []).toString('hex')]));
    expect(text(decoded[2]!.metadata?.['custom-key'])).toBe('v');
    const again = await codec.encode([originals[0]!]);
    expect(Buffer.from(again[0]!.data!).equals(Buffer.from(encoded[0]!.data!))).toBe(false);
    // Payloads written before encryption was switched on still decode.
    expect(await codec.decode([originals[0]!])).toEqual([originals[0]]);
  });

  it('refuses altered payloads (GCM authentication) and unknown keys with a clear error', async () => {
    const key = newKey();
    const codec = new AesGcmPayloadCodec(key);
    const [sealed] = await codec.encode([jsonPayload({ amount: 100 })]);
    const tamper = async (change: (p: { metadata: Record<string, Uint8Array>; data: Buffer }) => void) => {
      const copy = {
        metadata: { ...sealed!.metadata } as Record<string, Uint8Array>,
        data: Buffer.from(sealed!.data!),
      };
      change(copy);
      return codec.decode([{ metadata: copy.metadata, data: new Uint8Array(copy.data) }]).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    };
    for (const offset of [0, 12, 20, -1]) {
      const error = await tamper((p) => {
        const at = offset < 0 ? p.data.length + offset : offset;
        p.data[at] = p.data[at]! ^ 0x01;
      });
      expect(error, `byte ${offset}`).toBeInstanceOf(PayloadDecryptionError);
      expect(error!.message).toMatch(/failed authentication with key mw-[0-9a-f]{16}: it was altered/);
    }
    const cut = await tamper((p) => (p.data = p.data.subarray(0, 10)));
    expect(cut!.message).toMatch(/too short/);
    const stranger = keyIdOf(newKey());
    const unknown = await tamper((p) => (p.metadata[KEY_ID_METADATA] = utf8(stranger)));
    expect(unknown).toBeInstanceOf(PayloadDecryptionError);
    expect(unknown!.message).toContain(`encrypted with key ${stranger}, which this process does not hold`);
    expect(unknown!.message).toContain('MOCKWORLD_PAYLOAD_OLD_KEYS');
    const cipher = await tamper((p) => (p.metadata['encryption-cipher'] = utf8('ROT13')));
    expect(cipher!.message).toMatch(/cipher "ROT13"/);
    // A different key that claims the same id fails authentication rather than decrypting.
    const impostor = new AesGcmPayloadCodec(newKey());
    const forged = (await impostor.encode([jsonPayload({ amount: 1 })]))[0]!;
    forged.metadata![KEY_ID_METADATA] = utf8(codec.keyId);
    await expect(codec.decode([forged])).rejects.toThrow(/failed authentication/);
  });

  it('rotates keys: the new key encrypts, old keys still decrypt what they wrote', async () => {
    const [oldKey, newer] = [newKey(), newKey()];
    const written = await new AesGcmPayloadCodec(oldKey).encode([jsonPayload('before rotation')]);
    const rotated = new AesGcmPayloadCodec(newer, [oldKey]);
    expect(rotated.keyId).toBe(keyIdOf(newer));
    expect(text((await rotated.decode(written))[0]!.data)).toBe('"before rotation"');
    const fresh = await rotated.encode([jsonPayload('after')]);
    expect(text(fresh[0]!.metadata?.[KEY_ID_METADATA])).toBe(keyIdOf(newer));
    await expect(new AesGcmPayloadCodec(newer).decode(written)).rejects.toThrow(/does not hold/);
  });

  it('is configured by the environment, which refuses malformed keys without echoing them', () => {
    const key = newKey().toString('base64');
    const old = newKey().toString('base64');
    const codec = payloadCodecFromEnvironment(
      loadEnvironment({
        MOCKWORLD_PAYLOAD_KEY: key,
        MOCKWORLD_PAYLOAD_OLD_KEYS: ` ${old} ,` + ` ${newKey().toString('base64')}`,
      }),
    );
    expect(codec?.keyId).toBe(keyIdOf(Buffer.from(key, 'base64')));
    expect(payloadCodecFromEnvironment(loadEnvironment({}))).toBeUndefined();
    const short = randomBytes(31).toString('base64');
    for (const [variable, value] of [
      ['MOCKWORLD_PAYLOAD_KEY', short],
      ['MOCKWORLD_PAYLOAD_KEY', 'not base64 at all, but long enough to be 44 chars!!'],
      ['MOCKWORLD_PAYLOAD_OLD_KEYS', `${key},${short}`],
      ['MOCKWORLD_CODEC_AUTH', 'short'],
    ] as const) {
      let message = '';
      try {
        loadEnvironment({ [variable]: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, variable).toContain(variable);
      expect(message).not.toContain(value);
    }
  });

  it('is added after the codecs a data converter already has', () => {
    const first: PayloadCodec = { encode: async (p) => p, decode: async (p) => p };
    const codec = new AesGcmPayloadCodec(newKey());
    expect(withPayloadCodec({ payloadCodecs: [first] }, codec)?.payloadCodecs).toEqual([first, codec]);
    expect(withPayloadCodec(undefined, undefined)).toBeUndefined();
  });
});

describe('a workflow run with payload encryption on', () => {
  const key = newKey();
  const codec = new AesGcmPayloadCodec(key);
  const AUTH = `Bearer ${randomBytes(16).toString('hex')}`;
  const MARKER = `codec-marker-${randomBytes(6).toString('hex')}`;
  let db: TestDatabase;
  let models: ModelServer;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let worker: Worker;
  let running: Promise<void>;
  let client: Client;
  let raw: Client;
  let server: CodecServer;
  let metricsAddress: string;
  const taskQueue = `codec-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    try {
      Runtime.install({ logger: new DefaultLogger('WARN') });
    } catch {
      /* installed already */
    }
    db = await createTestDatabase('mw_codec');
    models = await startModelServer({ script: () => `hello ${MARKER}` });
    nativeConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      plugins: [new MockworldPlugin({ databaseUrl: db.url, payloadCodec: codec })],
    });
    running = worker.run();
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection, dataConverter: { payloadCodecs: [codec] } });
    raw = new Client({ connection });
    metricsAddress = `127.0.0.1:${await freePort()}`;
    server = await startCodecServer({ codec, port: 0, authorization: AUTH, metricsAddress });
  });
  afterAll(async () => {
    await server?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running?.catch(() => undefined);
    await nativeConnection?.close();
    await connection?.close();
    await models?.close();
    await db?.drop();
  });

  const spec = (steps: number) => ({
    kind: 'Smoke',
    name: `name-${MARKER}`,
    prompt: `prompt ${MARKER}`,
    steps,
    model: { endpoint: { baseUrl: models.url, model: `model-${MARKER}` } },
  });
  const decode = (body: unknown, headers: Record<string, string> = { authorization: AUTH }) =>
    fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
      body: JSON.stringify(body),
    });

  it('stores only ciphertext in the history, which the codec server decodes for key holders', async () => {
    const handle = await client.workflow.start('Smoke', {
      args: [spec(2)],
      taskQueue,
      workflowId: `codec-${Date.now()}`,
    });
    expect(await handle.result()).toMatchObject({ steps: 2, firstAnswer: `hello ${MARKER}` });

    const history = await raw.workflow.getHandle(handle.workflowId).fetchHistory();
    const bytes = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.includes(MARKER)).toBe(false); // spec, activity inputs, results: all ciphertext
    const payloads: Payload[] = [];
    const walk = (value: unknown, under: string) => {
      if (!value || typeof value !== 'object') return;
      const node = value as Record<string, unknown>;
      if (node.metadata && 'data' in node && under !== 'indexedFields') payloads.push(node as Payload);
      for (const [k, v] of Object.entries(node))
        walk(v, k === 'indexedFields' || under === 'indexedFields' ? 'indexedFields' : k);
    };
    walk(history.events, '');
    expect(payloads.length).toBeGreaterThanOrEqual(6); // the spec, 2 step inputs and results, run records, the result
    for (const payload of payloads) expect(text(payload.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    // Without the key, the result cannot be read.
    await expect(raw.workflow.getHandle(handle.workflowId).result()).rejects.toThrow(
      /binary\/encrypted|encoding/i,
    );

    const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const answer = await decode(toWire(input as Payload[]));
    expect(answer.status).toBe(200);
    const [decoded] = fromWire((await answer.json()) as Wire);
    expect(text(decoded!.metadata?.encoding)).toBe('json/plain');
    expect(JSON.parse(text(decoded!.data))).toMatchObject({
      prompt: `prompt ${MARKER}`,
      name: `name-${MARKER}`,
    });
  });

  it('fails at once on a spec that is invalid, with the failure readable through the codec client', async () => {
    const handle = await client.workflow.start('Smoke', {
      args: [{ steps: -1 }],
      taskQueue,
      workflowId: `codec-bad-${Date.now()}`,
    });
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(String((error as WorkflowFailedError).cause?.message)).toMatch(/steps/);
  });

  it('answers the remote codec protocol: auth, CORS for the Temporal UI, encode, tampering, limits', async () => {
    const before = await scrape(metricsAddress);
    const plain = toWire([jsonPayload({ hello: MARKER })]);
    expect((await decode(plain, {})).status).toBe(401);
    expect((await decode(plain, { authorization: `${AUTH}x` })).status).toBe(401);
    const encoded = await fetch(`${server.url}/encode`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: JSON.stringify(plain),
    });
    expect(encoded.status).toBe(200);
    const sealed = (await encoded.json()) as Wire;
    expect(Buffer.from(sealed.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    const opened = await decode(sealed);
    expect(fromWire((await opened.json()) as Wire).map((p) => JSON.parse(text(p.data)))).toEqual([
      { hello: MARKER },
    ]);

    const flipped = Buffer.from(sealed.payloads[0]!.data, 'base64');
    flipped[flipped.length - 1]! ^= 1;
    const tampered = await decode({
      payloads: [{ ...sealed.payloads[0], data: flipped.toString('base64') }],
    });
    expect(tampered.status).toBe(400);
    expect(((await tampered.json()) as { error: string }).error).toMatch(/failed authentication/);
    expect((await decode({ nope: 1 })).status).toBe(400);
    expect((await decode({ payloads: [{ data: '***' }] })).status).toBe(400);
    const huge = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { authorization: AUTH },
      body: 'x'.repeat(17 * 1024 * 1024),
    }).catch((e: unknown) => e as Error);
    if (huge instanceof Response) expect(huge.status).toBe(413);
    else expect(String(huge)).toMatch(/fetch failed|socket|reset/i); // closed while still sending
    expect((await fetch(`${server.url}/other`, { method: 'POST' })).status).toBe(404);

    const preflight = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/X-Namespace/i);
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/POST/);
    const fromUi = await decode(sealed, { authorization: AUTH, origin: 'http://localhost:8233' });
    expect(fromUi.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
    const elsewhere = await decode(sealed, { authorization: AUTH, origin: 'http://evil.example' });
    expect(elsewhere.headers.get('access-control-allow-origin')).toBeNull();

    // Its requests by route and outcome at MOCKWORLD_METRICS_ADDRESS.
    const after = await scrape(metricsAddress);
    const delta = (route: string, outcome: string) => {
      const labels = { service: 'codec', route, outcome };
      const name = 'mockworld_service_request_duration_seconds_count';
      return sampleValue(after, name, labels) - sampleValue(before, name, labels);
    };
    expect(delta('encode', 'ok')).toBe(1);
    expect(delta('decode', 'client_error')).toBeGreaterThanOrEqual(5); // 2 x 401, tampered, 2 malformed
    expect(delta('preflight', 'ok')).toBe(1);
    expect(delta('other', 'client_error')).toBe(1);
  });

  it('runs as `mockworld codec-server` with the key and the auth value from the environment', async () => {
    const cli = (env: Record<string, string>, ...args: string[]) => {
      const base = { ...process.env };
      delete base.MOCKWORLD_PAYLOAD_KEY;
      delete base.MOCKWORLD_CODEC_AUTH;
      return spawn(path.join(REPO_ROOT, 'bin', 'mockworld'), ['codec-server', ...args], {
        env: { ...base, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    };
    const child = cli(
      { MOCKWORLD_PAYLOAD_KEY: key.toString('base64'), MOCKWORLD_CODEC_AUTH: AUTH },
      '--port',
      '0',
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /listening on (http:\/\/\S+) \(key (mw-[0-9a-f]+)\)/.exec(out);
          if (match) {
            expect(match[2]).toBe(codec.keyId);
            resolve(match[1]!);
          }
        });
        child.once('exit', (code) => reject(new Error(`codec-server exited with ${code}`)));
      });
      const [sealed] = await codec.encode([jsonPayload({ via: 'cli' })]);
      const anonymous = await fetch(`${url}/decode`, {
        method: 'POST',
        body: JSON.stringify(toWire([sealed!])),
      });
      expect(anonymous.status).toBe(401);
      const answer = await fetch(`${url}/decode`, {
        method: 'POST',
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: JSON.stringify(toWire([sealed!])),
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(text(fromWire((await answer.json()) as Wire)[0]!.data))).toEqual({ via: 'cli' });
      const stopped = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      expect(await stopped).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
