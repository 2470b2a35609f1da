import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parseDocument } from 'yaml';
import { REPO_ROOT } from '../../deploy/paths.js';

const exec = promisify(execFile);
const DEPLOY = path.join(REPO_ROOT, 'deploy');

/** What a run of a tool printed, and its exit code (0 or not), without throwing. */
async function run(command: string, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await exec(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code || 1, stdout: e.stdout, stderr: e.stderr };
  }
}

interface K8sObject {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: any; // the parts each check reads; the rendering itself is kubectl's
  data?: Record<string, string>;
}

/**
 * The deploy files, checked offline as CI does (deploy/lint-tools.sh installs the tools): the
 * Dockerfiles pass hadolint, docker-compose accepts the compose file, and both Kubernetes overlays
 * render, with what a cluster needs in them.
 */
describe('deploy files', () => {
  const tools = new Map<string, string[]>();
  beforeAll(async () => {
    const { stdout } = await exec('bash', [path.join(DEPLOY, 'lint-tools.sh')], { timeout: 300_000 });
    for (const line of stdout.trim().split('\n')) {
      const [name, command] = line.split('\t');
      tools.set(name!, command!.split(' '));
    }
  }, 300_000);
  const tool = (name: string, ...args: string[]) => {
    const [command, ...fixed] = tools.get(name)!;
    return run(command!, [...fixed, ...args]);
  };

  it('every Dockerfile passes hadolint', async () => {
    const dockerfiles = readdirSync(path.join(DEPLOY, 'docker')).filter((f) => f.endsWith('.Dockerfile'));
    expect(dockerfiles.sort()).toEqual([
      'cpu-worker.Dockerfile',
      'trainer.Dockerfile',
      'verl-adapter.Dockerfile',
    ]);
    const result = await tool('hadolint', ...dockerfiles.map((f) => path.join(DEPLOY, 'docker', f)));
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('docker-compose accepts the compose file, and refuses to start without a model endpoint', async () => {
    const compose = path.join(DEPLOY, 'compose', 'compose.yaml');
    const [command, ...fixed] = ['docker-compose', '-f', compose];
    const required = {
      MOCKWORLD_MODEL_URL: 'http://vllm:8000/v1',
      MOCKWORLD_MODEL_GATEWAY_AUTH: 'a'.repeat(32),
    };
    const accepted = await run(command, [...fixed, 'config', '-q'], required);
    expect(accepted.stderr).toBe('');
    expect(accepted.code).toBe(0);
    const services = await run(
      command,
      [
        ...fixed,
        ...['--profile', 'gpu', '--profile', 'encryption', '--profile', 'world', '--profile', 'viewer'],
        ...['config', '--services'],
      ],
      required,
    );
    expect(services.stdout.trim().split('\n').sort()).toEqual(
      [
        'codec-server',
        'cpu-worker',
        'gateway',
        'mockworld-setup',
        'policy-server',
        'postgresql',
        'temporal',
        'temporal-namespace',
        'temporal-schema',
        'temporal-ui',
        'trainer',
        'viewer',
        'world',
      ].sort(),
    );
    // The viewer listens on 0.0.0.0 in its container (so it needs its token), published on loopback only.
    const viewer = await run(command, [...fixed, '--profile', 'viewer', 'config'], required);
    expect(viewer.code).toBe(0);
    const viewerService = parseDocument(viewer.stdout).toJS().services.viewer;
    expect(viewerService.command).toEqual(['view', '--host', '0.0.0.0', '--port', '8234']);
    expect(viewerService.environment).toHaveProperty('MOCKWORLD_VIEWER_TOKEN');
    // docker-compose v1 prints a port as "ip:published:target/proto", v2 as an object.
    const ports = (
      viewerService.ports as (string | { host_ip: string; published: string; target: number })[]
    ).map((p) =>
      typeof p === 'string' ? p.replace(/\/tcp$/, '') : `${p.host_ip}:${p.published}:${p.target}`,
    );
    expect(ports).toEqual(['127.0.0.1:8234:8234']);
    expect(viewerService.healthcheck.test.join(' ')).toContain('/health');
    const missing = await run(command, [...fixed, 'config', '-q'], {
      MOCKWORLD_MODEL_GATEWAY_AUTH: 'a'.repeat(32),
    });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('set MOCKWORLD_MODEL_URL');
  });

  describe.each(['temporal-cloud', 'self-hosted'])('the %s overlay', (overlay) => {
    let objects: K8sObject[];
    const deployment = (name: string) =>
      objects.find((o) => (o.kind === 'Deployment' || o.kind === 'Job') && o.metadata.name === name)!;
    const container = (name: string) => deployment(name).spec.template.spec.containers[0];
    const deployments = [
      'mockworld-cpu-worker',
      'mockworld-gateway',
      'mockworld-world',
      'mockworld-trainer',
      'mockworld-policy',
      'mockworld-viewer',
    ];

    beforeAll(async () => {
      const rendered = await tool('kustomize', path.join(DEPLOY, 'k8s', 'overlays', overlay));
      expect(rendered.stderr).toBe('');
      expect(rendered.code).toBe(0);
      objects = parseAllDocuments(rendered.stdout).map((doc) => doc.toJS() as K8sObject);
    });

    it('renders the CPU worker, gateway, world service, trainer, policy server and viewer with probes', () => {
      for (const name of deployments) {
        const c = container(name);
        expect(c.livenessProbe?.httpGet, `${name} liveness`).toBeDefined();
        expect(c.readinessProbe?.httpGet, `${name} readiness`).toBeDefined();
        expect(deployment(name).metadata).toMatchObject({ namespace: 'mockworld' });
      }
      expect(
        objects
          .filter((o) => o.kind === 'Service')
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(['mockworld-gateway', 'mockworld-policy', 'mockworld-viewer', 'mockworld-world']);
    });

    it('serves the viewer on the cluster only with its token, probed on /health', () => {
      const viewer = container('mockworld-viewer');
      expect(viewer.args).toEqual(['view', '--host', '0.0.0.0', '--port', '8234']);
      // The token comes from the Secret (the viewer refuses 0.0.0.0 without it), never the config map.
      expect(viewer.envFrom).toContainEqual({ secretRef: { name: 'mockworld-secrets' } });
      const config = objects.find((o) => o.kind === 'ConfigMap')!.data!;
      expect(config).not.toHaveProperty('MOCKWORLD_VIEWER_TOKEN');
      expect(viewer.livenessProbe.httpGet).toMatchObject({ path: '/health', port: 'http' });
      expect(viewer.readinessProbe.httpGet).toMatchObject({ path: '/health', port: 'http' });
      expect(viewer.ports).toContainEqual({ name: 'http', containerPort: 8234 });
      const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'mockworld-viewer')!;
      expect(service.spec.ports).toContainEqual({ name: 'http', port: 8234, targetPort: 'http' });
      expect(service.spec.selector).toEqual({ 'app.kubernetes.io/name': 'mockworld-viewer' });
    });

    it('gives the trainer and the policy server a GPU, and the metrics to Prometheus', () => {
      for (const name of ['mockworld-trainer', 'mockworld-policy']) {
        expect(container(name).resources.limits['nvidia.com/gpu']).toBe(1);
        expect(container(name).resources.requests['nvidia.com/gpu']).toBe(1);
      }
      for (const name of ['mockworld-cpu-worker', 'mockworld-trainer']) {
        expect(deployment(name).spec.template.metadata.annotations).toMatchObject({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': '9464',
        });
        expect(container(name).livenessProbe.httpGet).toMatchObject({ path: '/metrics' });
      }
      // The gateway, the world service and the viewer serve their request metrics there too (probed on /health).
      for (const name of ['mockworld-gateway', 'mockworld-world', 'mockworld-viewer']) {
        expect(deployment(name).spec.template.metadata.annotations).toMatchObject({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': '9464',
        });
        expect(container(name).ports).toContainEqual({ name: 'metrics', containerPort: 9464 });
      }
      // The policy server serves its own on its http port.
      expect(deployment('mockworld-policy').spec.template.metadata.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '11436',
      });
    });

    it("versions the CPU workers by their image's tag", () => {
      const worker = container('mockworld-cpu-worker');
      const tag = String(worker.image).split(':')[1];
      expect(worker.env).toContainEqual({ name: 'MOCKWORLD_BUILD_ID', value: tag });
      const config = objects.find(
        (o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('mockworld-config'),
      )!;
      expect(config.data).toMatchObject({
        MOCKWORLD_DEPLOYMENT_NAME: 'mockworld',
        MOCKWORLD_METRICS_ADDRESS: '0.0.0.0:9464',
      });
      expect(worker.envFrom).toContainEqual({ configMapRef: { name: config.metadata.name } });
      expect(worker.envFrom).toContainEqual({ secretRef: { name: 'mockworld-secrets' } });
    });

    it("connects through Temporal's environment configuration", () => {
      const config = objects.find((o) => o.kind === 'ConfigMap')!.data!;
      expect(config.TEMPORAL_ADDRESS).toMatch(/:7233$/);
      for (const name of [...deployments.filter((n) => n !== 'mockworld-policy'), 'mockworld-setup']) {
        const c = container(name);
        if (overlay === 'temporal-cloud') {
          expect(c.env).toContainEqual({
            name: 'TEMPORAL_API_KEY',
            valueFrom: { secretKeyRef: { name: 'temporal-cloud', key: 'api-key' } },
          });
        } else {
          expect(c.volumeMounts).toContainEqual({
            name: 'temporal-tls',
            mountPath: '/etc/temporal-tls',
            readOnly: true,
          });
          expect(config.TEMPORAL_TLS_CLIENT_CERT_PATH).toBe('/etc/temporal-tls/tls.crt');
        }
      }
      // The setup job runs `mockworld stack up` (search attributes, migrations) with the same settings.
      expect(container('mockworld-setup')).toMatchObject({ args: ['stack', 'up'] });
      // The trainer keeps its checkpoints volume next to whatever the overlay adds.
      expect(container('mockworld-trainer').volumeMounts).toContainEqual({
        name: 'checkpoints',
        mountPath: '/checkpoints',
      });
    });
  });
});
