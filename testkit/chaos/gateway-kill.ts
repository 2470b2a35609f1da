/**
 * Fault (f): the model gateway SIGKILLed with calls in flight, and started again on its port. The
 * CPU workers' calls through it fail (ModelGatewayError, retryable), their activities are retried
 * and find the answers the gateway stored, or ask again. An answer the model server had handed
 * over but the gateway had not yet stored when it died is paid again: the audit attributes those
 * to this kill by the gateway's TCP ports (the window at-least-once delivery leaves open).
 */
import { query } from '../database.js';
import type { KillRecord } from './audit.js';
import { sleep, tcpPortsOf, type Supervised } from './components.js';
import type { FaultContext, FaultRecord, Injector } from './types.js';

/** Calls the gateway is completing now (its /health); undefined when it does not answer. */
export async function gatewayInFlight(url: string): Promise<number | undefined> {
  try {
    const response = await fetch(new URL('/health', url), { signal: AbortSignal.timeout(2_000) });
    const body = (await response.json()) as { inFlight?: number };
    return typeof body.inFlight === 'number' ? body.inFlight : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The injector of fault (f): waits (up to 30 s) for calls in flight in `gateway`, SIGKILLs it,
 * starts it again, and watches for the first model answer recorded in the ledger of `databaseUrl`
 * after it is back.
 */
export function gatewayKillInjector(
  ctx: FaultContext,
  gateway: Supervised,
  url: string,
  databaseUrl: string,
  kills: KillRecord[],
): Injector {
  return async (seq) => {
    const pid = gateway.pid;
    if (pid === undefined) return 'later';
    let inFlight = 0;
    const waitUntil = Date.now() + 30_000;
    while (Date.now() < waitUntil && !ctx.stopping()) {
      inFlight = (await gatewayInFlight(url)) ?? 0;
      if (inFlight > 0) break;
      await sleep(100);
    }
    // Stopped first, so that no connection opens between reading its ports and the kill (an
    // answer on one would be paid twice and blamed on nothing).
    try {
      process.kill(pid, 'SIGSTOP');
    } catch {
      return 'later'; // gone meanwhile
    }
    const ports = await tcpPortsOf(pid);
    const at = Date.now();
    const kill: KillRecord = { pid, at, ports, process: 'gateway' };
    kills.push(kill);
    const { next } = await gateway.killAndRestart();
    kill.diedAt = Date.now();
    const record: FaultRecord = {
      kind: 'gateway-kill',
      seq,
      atS: ctx.seconds(at),
      detail: `gateway pid ${pid} with ${inFlight} model calls in flight`,
      runsInProgress: ctx.runsInProgress(),
      interrupted: inFlight,
      notes: [`its TCP ports at the kill: ${ports.join(', ')}`],
    };
    ctx.record(record);
    ctx.log(`fault (f) #${seq}: SIGKILL ${record.detail}`);
    try {
      await next.ready;
      const waitBack = Date.now() + 60_000;
      while ((await gatewayInFlight(url)) === undefined && Date.now() < waitBack) await sleep(100);
    } catch (error) {
      record.notes.push(`the restarted gateway failed: ${(error as Error).message.slice(0, 300)}`);
      return 'done';
    }
    const backAt = Date.now();
    record.backMs = backAt - at;
    ctx.monitor(
      (async () => {
        const deadline = ctx.watchUntil(at);
        while (Date.now() < deadline()) {
          const [row] = await query<{ last: Date | null }>(
            databaseUrl,
            'SELECT max(created_at) AS last FROM llm_calls',
          ).catch(() => [{ last: null }]);
          if (row?.last && row.last.getTime() >= backAt) {
            record.recoveryMs = Date.now() - at;
            return;
          }
          await sleep(250);
        }
        if (ctx.runsInProgress() === 0) {
          record.recoveryMs = backAt - at;
          record.notes.push('no model call after the gateway was back: recovered = back');
        } else record.notes.push('no model answer recorded through the restarted gateway in time');
      })(),
    );
    return 'done';
  };
}
