/**
 * Fault (g): a model server that answers slowly for minutes. For a window of `windowMs` every
 * request the server receives waits `latencyMs` (drawn per half second, seeded) before its answer;
 * then the server's own latency is back. The workload's endpoints time out after longer than the
 * slowest answer, so nothing may be given up or retried: activities keep heartbeating through a
 * 20-second call, and every answer is paid for once. What the window did is read back from the
 * server's own logs: requests that arrived in it and got no answer although none was faulted are
 * calls a client gave up on (a timeout, or an activity retried under it).
 */
import type { ModelServer } from '../model-server.js';
import { sleep } from './components.js';
import type { KillRecord } from './audit.js';
import type { FaultContext, FaultRecord, Injector } from './types.js';

export interface SlowModelOptions {
  /** Length of a slow window, drawn uniformly from [min, max] ms. */
  readonly windowMs: readonly [number, number];
  /** Latency of a request in the window, drawn uniformly from [min, max] ms. */
  readonly latencyMs: readonly [number, number];
}

/** A slow window as it happened, for the audit of retries. */
export interface SlowWindow {
  readonly server: string;
  readonly from: number;
  to?: number;
}

const between = ([min, max]: readonly [number, number], random: () => number) => min + random() * (max - min);

/**
 * The injector of fault (g). `servers` are the model servers the workload calls, with their normal
 * latency; `kills` the SIGKILLs of the run so far (a request cut off by a killed gateway is not a
 * give-up); `windows` collects the windows.
 */
export function slowModelInjector(
  ctx: FaultContext,
  servers: ReadonlyArray<{ name: string; server: ModelServer; latencyMs: number }>,
  options: SlowModelOptions,
  kills: readonly KillRecord[],
  windows: SlowWindow[],
): Injector {
  return async (seq, random) => {
    const target = servers[Math.floor(random() * servers.length)]!;
    const length = between(options.windowMs, random);
    const at = Date.now();
    const window: SlowWindow = { server: target.name, from: at };
    windows.push(window);
    const record: FaultRecord = {
      kind: 'slow-model',
      seq,
      atS: ctx.seconds(at),
      detail: `${target.name} model server answers after ${options.latencyMs.map((ms) => ms / 1000).join('–')} s for ${(length / 1000).toFixed(0)} s`,
      runsInProgress: ctx.runsInProgress(),
      notes: [],
    };
    ctx.record(record);
    ctx.log(`fault (g) #${seq}: ${record.detail}`);
    const arrivalsBefore = target.server.arrivals.length;
    // A fresh latency every half second: the requests of one window see the whole range.
    while (Date.now() - at < length && !ctx.stopping()) {
      target.server.setLatency(Math.round(between(options.latencyMs, random)));
      await sleep(500);
    }
    target.server.setLatency(target.latencyMs);
    const end = Date.now();
    window.to = end;
    record.windowMs = end - at;
    record.backMs = end - at;
    ctx.monitor(
      (async () => {
        // A request of the window is answered up to the longest latency after it, or given up by
        // its client at the endpoint's timeout (the longest latency plus a margin): past both,
        // and a margin for a busy machine, each one is one or the other.
        await sleep(2 * options.latencyMs[1] + 20_000);
        const arrived = target.server.arrivals.slice(arrivalsBefore).filter((a) => a.at < end);
        const delivered = new Set(
          target.server.deliveries.map((d) => `${d.receivedAt}\n${d.remotePort}\n${d.bodyHash}`),
        );
        const cutByKill = (port: number | undefined) =>
          kills.some((k) => port !== undefined && k.ports.includes(port) && k.at >= at);
        const givenUp = arrived.filter(
          (a) =>
            a.fault === undefined &&
            !delivered.has(`${a.at}\n${a.remotePort}\n${a.bodyHash}`) &&
            !cutByKill(a.remotePort),
        );
        record.interrupted = givenUp.length;
        const answered = target.server.deliveries.filter((d) => d.receivedAt >= at && d.receivedAt < end);
        record.notes.push(
          `${arrived.length} requests arrived in the window, ${answered.length} answered, ${givenUp.length} given up by the client` +
            (givenUp.length
              ? ` (${givenUp
                  .slice(0, 5)
                  .map((a) => `${a.role} at ${ctx.seconds(a.at)} s from port ${a.remotePort}`)
                  .join(', ')})`
              : ''),
        );
        // Recovered: a request that arrived after the window is answered (at the normal latency).
        const deadline = ctx.watchUntil(at);
        for (;;) {
          const next = target.server.deliveries.find((d) => d.receivedAt >= end);
          if (next) {
            record.recoveryMs = next.at - at;
            return;
          }
          if (Date.now() > deadline()) {
            if (target.server.arrivals.some((a) => a.at >= end && a.fault === undefined))
              record.notes.push('requests arrived after the window but none was answered in time');
            else {
              // Nothing asked this server anything after the window: its latency is back, no work waits.
              record.recoveryMs = end - at;
              record.notes.push('no request after the window: recovered = window end');
            }
            return;
          }
          await sleep(500);
        }
      })(),
    );
    return 'done';
  };
}
