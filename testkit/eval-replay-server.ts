import { serveModelServer } from './model-server-process.js';
import { evalReplayScript, readReplayPlans } from './eval-replay.js';

/**
 * The scripted model server replaying ground-truth plans, as a process of its own (for the
 * evaluation worker's pytest suite, which runs in Python): `node --import tsx
 * testkit/eval-replay-server.ts --serve PLANS.json` prints `{"url": ...}` and serves until stdin closes.
 */
const plans = process.argv[process.argv.indexOf('--serve') + 1];
if (!plans) throw new Error('usage: eval-replay-server.ts --serve PLANS.json');
await serveModelServer(evalReplayScript(readReplayPlans(plans)));
