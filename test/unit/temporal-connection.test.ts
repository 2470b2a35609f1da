import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TemporalConfigError, temporalTarget } from '../../services/temporal/connection.js';

/** Temporal's environment configuration, as every mockworld process resolves it (no server needed). */
describe('temporalTarget', () => {
  let dir: string;
  const NO_FILE = { TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml' };
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-envconfig-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('defaults to the local stack, plaintext', () => {
    expect(temporalTarget({}, NO_FILE)).toEqual({
      address: '127.0.0.1:7233',
      namespace: 'default',
      connection: { address: '127.0.0.1:7233' },
      security: 'plaintext',
    });
  });

  it('keeps TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE working; an explicit option wins over both', () => {
    const env = { ...NO_FILE, TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_NAMESPACE: 'ml' };
    expect(temporalTarget({}, env)).toMatchObject({ address: 'temporal.internal:7233', namespace: 'ml' });
    expect(temporalTarget({ address: '10.0.0.1:7233', namespace: 'x' }, env)).toMatchObject({
      address: '10.0.0.1:7233',
      namespace: 'x',
      connection: { address: '10.0.0.1:7233' },
    });
  });

  it('an empty variable is an unset one (a container passes VAR= for not given)', () => {
    expect(temporalTarget({}, { ...NO_FILE, TEMPORAL_ADDRESS: '', TEMPORAL_API_KEY: '' })).toMatchObject({
      address: '127.0.0.1:7233',
      connection: { address: '127.0.0.1:7233' },
      security: 'plaintext',
    });
  });

  it('an API key turns TLS on and is never in the description', () => {
    const target = temporalTarget({}, { ...NO_FILE, TEMPORAL_API_KEY: 'secret-key-123' });
    expect(target.connection).toMatchObject({ apiKey: 'secret-key-123', tls: true });
    expect(target.security).toBe('TLS, API key');
    expect(JSON.stringify(target.security)).not.toContain('secret');
  });

  it('reads client certificates and the server CA from their files, with the server name', async () => {
    for (const name of ['ca.pem', 'client.pem', 'client.key'])
      await writeFile(path.join(dir, name), `--${name}--`);
    const target = temporalTarget(
      {},
      {
        ...NO_FILE,
        TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'client.pem'),
        TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'client.key'),
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(dir, 'ca.pem'),
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
        TEMPORAL_GRPC_META_X_TEAM: 'ml',
      },
    );
    const tls = target.connection.tls as Exclude<typeof target.connection.tls, boolean | null | undefined>;
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('--client.pem--');
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe('--client.key--');
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe('--ca.pem--');
    expect(tls.serverNameOverride).toBe('temporal.internal');
    expect(target.connection.metadata).toEqual({ 'x-team': 'ml' });
    expect(target.security).toBe('TLS, client certificate');
  });

  it('takes a profile of the config file (TEMPORAL_PROFILE), the variables overriding it', async () => {
    const file = path.join(dir, 'temporal.toml');
    await writeFile(
      file,
      '[profile.default]\naddress = "127.0.0.1:1"\n' +
        '[profile.cloud]\naddress = "ns.acct.tmprl.cloud:7233"\nnamespace = "ns.acct"\napi_key = "k-123"\n',
    );
    const cloud = temporalTarget({}, { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
    expect(cloud).toMatchObject({
      address: 'ns.acct.tmprl.cloud:7233',
      namespace: 'ns.acct',
      security: 'TLS, API key',
    });
    expect(temporalTarget({}, { TEMPORAL_CONFIG_FILE: file }).address).toBe('127.0.0.1:1');
    expect(
      temporalTarget(
        {},
        { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud', TEMPORAL_NAMESPACE: 'other' },
      ).namespace,
    ).toBe('other');
  });

  it('a missing profile or certificate file fails at once, naming what to check', () => {
    expect(() => temporalTarget({}, { ...NO_FILE, TEMPORAL_PROFILE: 'nope' })).toThrow(TemporalConfigError);
    expect(() => temporalTarget({}, { ...NO_FILE, TEMPORAL_PROFILE: 'nope' })).toThrow(/TEMPORAL_PROFILE/);
    expect(() =>
      temporalTarget({}, { ...NO_FILE, TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'absent.pem') }),
    ).toThrow(/TEMPORAL_TLS_\* paths/);
  });
});
