import type { Environment } from '../schemas/environment.js';
import { nodeEntryArgs } from './paths.js';
import { livePid, managedProcess, spawnDetached } from './processes.js';

/**
 * The codec server of the local stack: with payload encryption on (MOCKWORLD_PAYLOAD_KEY), every
 * payload in the Temporal UI is ciphertext unless the UI decodes through a codec server holding
 * the key. `mockworld stack up` runs one on 127.0.0.1 and starts the dev server's UI with it as the
 * codec endpoint, so the UI shows plaintext with nothing to configure in the browser.
 */

/** Name of the managed process (pid and log files under MOCKWORLD_HOME). */
export const CODEC_COMPONENT = 'codec-server';

/** The endpoint the local UI decodes through; undefined when payloads are not encrypted. */
export function localCodecEndpoint(env: Environment): string | undefined {
  return env.MOCKWORLD_PAYLOAD_KEY ? `http://127.0.0.1:${env.MOCKWORLD_CODEC_PORT}` : undefined;
}

async function answers(url: string): Promise<boolean> {
  try {
    // Any HTTP answer (the codec server has no GET route: 404) means it is listening.
    await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts `mockworld codec-server` on MOCKWORLD_CODEC_PORT unless something answers there already
 * (idempotent); it inherits the key from this process's environment. Returns its URL, or
 * undefined when payloads are not encrypted.
 */
export async function codecUp(log: (line: string) => void, env: Environment): Promise<string | undefined> {
  const url = localCodecEndpoint(env);
  if (!url) return undefined;
  if (env.MOCKWORLD_CODEC_AUTH)
    log(
      'codec      MOCKWORLD_CODEC_AUTH is set: the local UI sends no Authorization header, so it ' +
        'cannot decode; unset it for the local stack (the CLI can pass it: --codec-auth)',
    );
  if (await answers(url)) {
    log(`codec      ${url}  already running`);
    return url;
  }
  const proc = managedProcess(env.MOCKWORLD_HOME, CODEC_COMPONENT);
  await spawnDetached(proc, process.execPath, [
    ...nodeEntryArgs('cli/main'),
    'codec-server',
    '--port',
    String(env.MOCKWORLD_CODEC_PORT),
  ]);
  const deadline = Date.now() + 60_000;
  while (!(await answers(url))) {
    if (!(await livePid(proc))) throw new Error(`the codec server exited; see ${proc.logFile}`);
    if (Date.now() > deadline)
      throw new Error(`the codec server did not answer in 60 s; see ${proc.logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  log(`codec      ${url}  started: the UI decodes encrypted payloads through it`);
  return url;
}
