/** What the GRPO benchmark prints: Markdown tables and notes for the README, and the notes of its results file. */
import os from 'node:os';
import type { PathFigures, ScaleFigures, TemporalFigures, ThroughputCell } from './paths.js';
import { SETTINGS, TARGETS } from './settings.js';

/** How each figure was taken (written into the results file). */
export const NOTES = [
  "temporal: GrpoTraining on a CLI dev server (SQLite file) started by the bench; in-process CPU worker (MockworldPlugin, the CPU worker's activity slots); fresh PostgreSQL database per path and cell.",
  "trainer (standin): a TypeScript stand-in for the GPU step registered on the run's GPU queue by the bench: it reads the batch rows by batch_ref and records the step (record.json per step, in order, replay on repeat) but computes no gradient. python: the real trainer worker (CPU torch, tiny random model).",
  'plain: the same activity (createActivities: runJudgedRolloutGroup, n rollouts each) called in GrpoGroup order with the same bounded concurrency (groups in flight), each call in a MockActivityEnvironment.',
  'rollout phase (temporal): server time of the first StartChildWorkflowExecutionInitiated → last ChildWorkflowExecutionCompleted in the parent history; (plain): first rollout started → last judgement stored.',
  "CPU: this process (worker or plain loop), the dev server, the model server, and the PostgreSQL backends of the path's database (by pid; WAL writer and checkpointer not counted).",
  'history: events per workflow run and largest encoded temporal.api.common.v1.Payload / HistoryEvent, over the parent run(s) and every GrpoGroup child run of the iteration.',
];

/** The Markdown tables and notes of one benchmark run, on stdout. */
export function print(scale: ScaleFigures | undefined, cells: ThroughputCell[], totalSeconds: number): void {
  const f0 = (n: number) => n.toFixed(0);
  const f1 = (n: number) => n.toFixed(1);
  const f2 = (n: number) => n.toFixed(2);
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const lines: string[] = [];
  if (scale) {
    lines.push(
      `GRPO at the seed's scale: one iteration, ${scale.tasks} tasks x n = ${scale.rolloutsPerTask} = ${scale.rollouts} rollouts, all groups in flight, 0 ms model latency`,
      '',
      '| workflow run | runs | events per run | history per run | largest payload | largest event | target: < 10k events, < 256 KB payload |',
      '|---|---:|---:|---:|---|---|---|',
      `| GrpoTraining (parent) | ${scale.parent.runs} | ${scale.parent.eventsPerRun.join(', ')} | ${scale.parent.historyBytesPerRun.map(kib).join(', ')} | ` +
        `${kib(scale.parent.largestPayload.bytes)} (${scale.parent.largestPayload.eventType}) | ` +
        `${kib(scale.parent.largestEvent.bytes)} (${scale.parent.largestEvent.eventType}) | ` +
        `${Math.max(...scale.parent.eventsPerRun) < TARGETS.events && scale.parent.largestPayload.bytes < TARGETS.payloadBytes ? 'met' : 'MISSED'} |`,
      `| GrpoGroup (each child; largest) | ${scale.children.runs} | ${scale.children.eventsMin} / ${f1(scale.children.eventsMean)} / ${scale.children.eventsMax} (min / mean / max) | ${kib(scale.children.historyBytesMax)} (max) | ` +
        `${kib(scale.children.largestPayload.bytes)} (${scale.children.largestPayload.eventType}) | ` +
        `${kib(scale.children.largestEvent.bytes)} (${scale.children.largestEvent.eventType}) | ${scale.children.eventsMax < TARGETS.events && scale.children.largestPayload.bytes < TARGETS.payloadBytes ? 'met' : 'MISSED'} |`,
      '',
      '| iteration wall s | rollout phase s | rollouts/s | trainer step s | trainer | CPU s: worker + dev server + PostgreSQL + model server | PG commits / rows inserted / updated | model calls | episodes / judgements | reward mean | load avg start→end |',
      '|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
      `| ${f1(scale.wallMs / 1000)} | ${f1(scale.rolloutPhaseMs / 1000)} | ${f1(scale.rollouts / (scale.rolloutPhaseMs / 1000))} | ` +
        `${f1(scale.trainerStepMs / 1000)} | ${scale.trainer === 'standin' ? 'stand-in (no gradient)' : 'Python, CPU torch, tiny model'} | ` +
        `${f1(scale.cpuMs.bench / 1000)} + ${f1(scale.cpuMs.temporalServer / 1000)} + ${f1(scale.cpuMs.postgres / 1000)} + ${f1(scale.cpuMs.modelServer / 1000)} | ` +
        `${f0(scale.dbActivity.commits)} / ${f0(scale.dbActivity.inserted)} / ${f0(scale.dbActivity.updated)} | ${scale.modelCalls} | ` +
        `${scale.rows.episodes} / ${scale.rows.judgements} | ${f2(scale.rows.rewardMean)} | ${scale.loadAvg.start.toFixed(1)}→${scale.loadAvg.end.toFixed(1)} |`,
      '',
    );
  }
  if (cells.length) {
    type Cell = (typeof cells)[number];
    type Row = { cell: Cell; name: string; x: PathFigures; t?: TemporalFigures; ratio?: number };
    const temporalRows = (c: Cell): Row[] => [
      { cell: c, name: `Temporal (${c.temporal.worker})`, x: c.temporal, t: c.temporal, ratio: c.ratio },
      ...(c.before
        ? [{ cell: c, name: `Temporal (${c.before.worker})`, x: c.before, t: c.before, ratio: c.beforeRatio }]
        : []),
    ];
    const allRows = (c: Cell): Row[] => [...temporalRows(c), { cell: c, name: 'plain loop', x: c.plain }];
    const cpuTotal = (x: PathFigures) =>
      x.cpuMs.bench + x.cpuMs.temporalServer + x.cpuMs.postgres + x.cpuMs.modelServer;
    const load = (x: PathFigures) => `${x.loadAvg.start.toFixed(1)}→${x.loadAvg.end.toFixed(1)}`;
    lines.push(
      `Rollout throughput: ${SETTINGS.throughputTasks * SETTINGS.rolloutsPerTask} rollouts per path (${SETTINGS.throughputTasks} tasks x n = ${SETTINGS.rolloutsPerTask}), ` +
        `${cells[0]!.concurrentRollouts} in flight (${SETTINGS.groupsInFlight} groups x ${SETTINGS.rolloutsPerTask}), ${os.cpus().length} shared cores`,
      '',
      '| model latency | Temporal worker | Temporal rollouts/s | plain rollouts/s | Temporal/plain | target ≥ 0.9 | Temporal s (whole run s) | plain s | CPU ms/rollout, all processes: Temporal; plain | runJudgedRolloutGroup schedule→start p50 / p99 ms | model calls (T; plain) | load avg (T; plain) |',
      '|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
      ...cells.flatMap((c) =>
        temporalRows(c).map(({ t, ratio }) => {
          const p = c.plain;
          const wait = t!.activities['runJudgedRolloutGroup']?.scheduleToStartMs;
          return (
            `| ${c.upstreamLatencyMs} ms | ${t!.worker} | ${f1(t!.rolloutsPerSecond)} | ${f1(p.rolloutsPerSecond)} | ${f2(ratio!)} | ` +
            `${ratio! >= TARGETS.ratio ? 'met' : 'missed'} | ${f1(t!.rolloutMs / 1000)} (${f1(t!.runWallMs / 1000)}) | ${f1(p.rolloutMs / 1000)} | ` +
            `${f1(cpuTotal(t!) / t!.rollouts)}; ${f1(cpuTotal(p) / p.rollouts)} | ` +
            `${wait ? `${f0(wait.p50)} / ${f0(wait.p99)}` : '-'} | ${t!.modelCalls}; ${p.modelCalls} | ${load(t!)}; ${load(p)} |`
          );
        }),
      ),
      '',
      'Where the CPU goes, ms per rollout: this process by thread (main: JavaScript: activities, SDK, plain loop; core: the Rust core SDK; other: workflow sandbox thread, V8 GC/compiler, libuv), the dev server, the PostgreSQL backends of the run, the model server.',
      '',
      '| model latency | path | main | core | other | dev server | PostgreSQL | model server | total | history events / workflow tasks per rollout | PG commits / rows written per rollout | connections opened: model server / PostgreSQL |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...cells.flatMap((c) =>
        allRows(c).map(({ name, x, t }) => {
          const per = (ms: number | undefined) => f1((ms ?? 0) / x.rollouts);
          const th = x.cpuMs.benchThreads;
          const hist = t ? `${f1(t.historyEvents / x.rollouts)} / ${f2(t.workflowTasks / x.rollouts)}` : '-';
          return (
            `| ${c.upstreamLatencyMs} ms | ${name} | ${per(th['main'])} | ${per(th['core'])} | ${per((th['other'] ?? 0) + (th['workflow'] ?? 0))} | ` +
            `${per(x.cpuMs.temporalServer)} | ${per(x.cpuMs.postgres)} | ${per(x.cpuMs.modelServer)} | ${per(cpuTotal(x))} | ${hist} | ` +
            `${f1(x.dbActivity.commits / x.rollouts)} / ${f1((x.dbActivity.inserted + x.dbActivity.updated) / x.rollouts)} | ` +
            `${x.modelConnections} / ${x.dbActivity.sessions} |`
          );
        }),
      ),
      '',
      '| model latency | path | activity | schedule→start ms p50 / p99 | run ms p50 / p99 |',
      '|---:|---|---|---:|---:|',
      ...cells.flatMap((c) =>
        allRows(c).flatMap(({ name, x }) =>
          (['runJudgedRolloutGroup'] as const).map((activity) => {
            const a = x.activities[activity];
            return (
              `| ${c.upstreamLatencyMs} ms | ${name} | ${activity} | ` +
              `${a?.scheduleToStartMs ? `${f0(a.scheduleToStartMs.p50)} / ${f0(a.scheduleToStartMs.p99)}` : '-'} | ` +
              `${a ? `${f0(a.runMs.p50)} / ${f0(a.runMs.p99)}` : '-'} |`
            );
          }),
        ),
      ),
      '',
    );
  }
  const notes: string[] = [
    `> - ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), shared with other work: load averages are in the tables; the bench took ${f0(totalSeconds)} s.`,
  ];
  if (scale?.trainer === 'standin')
    notes.push(
      '> - The trainer step is a **stand-in** registered by the bench on the GPU queue (reads the batch by reference, records the step, computes no gradient): these figures measure the orchestration, not the trainer.',
    );
  for (const c of cells) {
    const t = c.temporal;
    const p = c.plain;
    const cpu = (x: PathFigures) =>
      (x.cpuMs.bench + x.cpuMs.temporalServer + x.cpuMs.postgres + x.cpuMs.modelServer) / x.rollouts;
    const cores = os.cpus().length;
    // Latency-bound throughput = in flight / (calls per rollout x latency); CPU-bound = cores / CPU per rollout.
    const calls = p.modelCalls / p.rollouts;
    const latencyBound = c.concurrentRollouts / ((calls * c.upstreamLatencyMs) / 1000);
    const cpuBound = (x: PathFigures) => (1000 * cores) / cpu(x);
    const breakEven = (x: PathFigures) => (c.concurrentRollouts * cpu(x)) / (cores * 1000 * calls);
    const cpuCeiling =
      latencyBound > cpuBound(t)
        ? ` On ${cores} otherwise idle cores that allows at most ${f0(cpuBound(t))} Temporal and ${f0(cpuBound(p))} plain rollouts/s ` +
          `(ratio ≤ ${f2(cpu(p) / cpu(t))}); measured ${f1(t.rolloutsPerSecond)} and ${f1(p.rolloutsPerSecond)}.`
        : '';
    notes.push(
      `> - ${c.upstreamLatencyMs} ms: Temporal/plain ${f2(c.ratio)}, ${c.ratio >= TARGETS.ratio ? 'meets' : 'misses'} the ${TARGETS.ratio} target. ` +
        `CPU per rollout, all processes: Temporal ${f0(cpu(t))} ms (dev server ${f0(t.cpuMs.temporalServer / t.rollouts)}), plain ${f0(cpu(p))} ms.${cpuCeiling}`,
    );
    if (c.upstreamLatencyMs > 0) {
      const bound =
        latencyBound > cpuBound(p)
          ? `both paths are CPU-bound here. They stop being so above about ${f2(breakEven(p))} s (plain) and ${f2(breakEven(t))} s (Temporal) per model call on ${cores} cores`
          : latencyBound > cpuBound(t)
            ? `the plain loop is bound by the model latency here, the Temporal path by CPU (above about ${f2(breakEven(t))} s per model call it is not)`
            : 'neither path is CPU-bound here: both wait on the model (and on the slowest rollout of each group), Temporal adding its dispatch latency per step (schedule→start and workflow task round trips)';
      notes.push(
        `> - ${c.upstreamLatencyMs} ms: with ${f1(calls)} model calls per rollout and ${c.concurrentRollouts} rollouts in flight, ` +
          `${c.upstreamLatencyMs} ms of model latency would allow ${f0(latencyBound)} rollouts/s: ${bound}.`,
      );
    }
    if (c.before) {
      const w = (x: TemporalFigures) => x.activities['runJudgedRolloutGroup']?.scheduleToStartMs?.p50 ?? 0;
      notes.push(
        `> - ${c.upstreamLatencyMs} ms, worker tuning (workers/cpu-worker.ts, ${t.worker} vs ${c.before.worker}): ` +
          `${f1(c.before.rolloutsPerSecond)} → ${f1(t.rolloutsPerSecond)} rollouts/s, CPU ${f0(cpu(c.before))} → ${f0(cpu(t))} ms/rollout, ` +
          `runJudgedRolloutGroup schedule→start p50 ${f0(w(c.before))} → ${f0(w(t))} ms, workflow tasks per rollout ` +
          `${f2(c.before.workflowTasks / c.before.rollouts)} → ${f2(t.workflowTasks / t.rollouts)}.`,
      );
    }
  }
  console.log([...lines, ...notes].join('\n'));
}
