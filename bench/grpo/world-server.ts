/**
 * Entry point, not a library: the GRPO world's scripted model server, run as a child process by
 * `startGrpoWorldServer` (./world.ts) and driven over stdin/stdout (testkit/model-server-process.ts).
 */
import { serveModelServer } from '../../testkit/model-server-process.js';
import { grpoScript } from './world.js';

await serveModelServer(grpoScript);
