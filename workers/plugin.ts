import { fileURLToPath } from 'node:url';
import type { PayloadCodec } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import { NativeConnection, type Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { closePools } from '../activities/store/db.js';
import { migrate } from '../activities/store/migrate.js';
import { RUNS_COMPILED } from '../deploy/paths.js';
import { givenDatabaseUrl, loadEnvironment } from '../schemas/environment.js';
import { payloadCodecFromEnvironment, withPayloadCodec } from '../services/codec/payload-codec.js';
import { AttemptRecovery } from './attempt-recovery.js';
import { ensureSearchAttributes, type SearchAttributeSetup } from '../deploy/search-attributes.js';

export { MissingSearchAttributesError, type SearchAttributeSetup } from '../deploy/search-attributes.js';

/** The module that exports every mockworld workflow; point your own bundle at it to combine. */
export const MOCKWORLD_WORKFLOWS_PATH = fileURLToPath(
  new URL(`../workflows/index.${RUNS_COMPILED ? 'js' : 'ts'}`, import.meta.url),
);

/** Options of {@link MockworldPlugin}. */
export interface MockworldPluginOptions {
  /**
   * PostgreSQL for runs, caches and datasets. Default: `DATABASE_URL`; with neither, the plugin
   * refuses to start unless `localDatabase` says to use the local default database.
   */
  readonly databaseUrl?: string;
  /** With no `databaseUrl` nor `DATABASE_URL`: use `postgres://postgres@127.0.0.1:5432/mockworld`. */
  readonly localDatabase?: boolean;
  /**
   * Encrypts every payload of the worker (and of a client given this plugin). Default: AES-256-GCM
   * when `MOCKWORLD_PAYLOAD_KEY` is set, else none; `null`: none whatever the environment.
   */
  readonly payloadCodec?: PayloadCodec | null;
  /**
   * mockworld's search attributes in the worker's namespace, checked before it polls (a run's
   * workflow tasks fail without them). `register` (default): add the missing ones; `check`: refuse
   * to start, naming them and the command that adds them (for namespaces whose attributes an
   * operator manages).
   */
  readonly searchAttributes?: SearchAttributeSetup;
}

/**
 * The local default database, only when asked for: a worker in someone's deployment that was
 * given no database must not migrate and write into whatever answers on localhost.
 */
function localDatabaseUrl(options: MockworldPluginOptions): string {
  if (!options.localDatabase)
    throw new Error(
      'MockworldPlugin has no database: set DATABASE_URL (postgres://user:password@host:5432/db) or pass ' +
        '{ databaseUrl }; to use the local default postgres://postgres@127.0.0.1:5432/mockworld, pass ' +
        '{ localDatabase: true }',
    );
  return loadEnvironment({}).DATABASE_URL;
}

/**
 * Adds mockworld to a Temporal worker: its workflows (unless the worker already names a
 * `workflowsPath`; re-export `MOCKWORLD_WORKFLOWS_PATH`'s module from yours in that case, its `default` export
 * included: it fails an unknown workflow type at once instead of leaving it running), its
 * activities, and database migrations before the worker polls.
 *
 * ```ts
 * await Worker.create({ connection, taskQueue: 'mockworld-cpu', plugins: [new MockworldPlugin()] });
 * ```
 */
export class MockworldPlugin extends SimplePlugin {
  private readonly recovery: AttemptRecovery;
  private namespaceOf?: { connection?: NativeConnection; namespace: string };

  constructor(options: MockworldPluginOptions = {}) {
    const databaseUrl = options.databaseUrl ?? givenDatabaseUrl() ?? localDatabaseUrl(options);
    const codec = options.payloadCodec === undefined ? payloadCodecFromEnvironment() : options.payloadCodec;
    const recovery = new AttemptRecovery(databaseUrl);
    super({
      name: 'mockworld',
      ...(codec ? { dataConverter: (existing) => withPayloadCodec(existing, codec)! } : {}),
      workflowsPath: (existing) => existing ?? MOCKWORLD_WORKFLOWS_PATH,
      activities: createActivities({ databaseUrl }),
      workerInterceptors: { activity: [recovery.interceptor] },
      runContext: async (next) => {
        await this.setUpNamespace(options.searchAttributes ?? 'register');
        await migrate(databaseUrl);
        try {
          await next();
        } finally {
          await closePools();
        }
      },
    });
    this.recovery = recovery;
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    this.namespaceOf = { connection: options.connection, namespace: options.namespace ?? 'default' };
    return super.configureWorker(options);
  }

  /** The search attributes of the worker's namespace (its connection's, or the SDK's default one). */
  private async setUpNamespace(setup: SearchAttributeSetup): Promise<void> {
    const { connection, namespace } = this.namespaceOf ?? { namespace: 'default' };
    const operator = connection ?? (await NativeConnection.connect());
    try {
      await ensureSearchAttributes(operator, namespace, setup);
    } finally {
      if (!connection) await operator.close();
    }
  }

  override runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    // Inside runContext: the migrations have run when the journal takes its slot.
    return super.runWorker(worker, (w) => this.recovery.around(w, () => next(w)));
  }
}
