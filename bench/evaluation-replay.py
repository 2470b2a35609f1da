"""The trial side of bench/evaluation-replay.ts (run with .venv-eval/bin/python; the .ts script runs it).

  plan [--limit N] [--groups bfcl/multi_turn_base,tau2/airline,...] --out FILE
      writes {"entries": [{benchmark, group, taskId}, ...], "plans": {task key: plan}}: every entry of
      the BFCL-V4 multi-turn categories and every tau2 base task (or the first N of each group), with
      its ground-truth replay plan from the evaluation worker's own loader (mockworld_eval.replay).
  run --url URL --entries FILE [--jobs J] [--stop-after S]
      runs each entry once (trial 0) through the official code exactly as the worker does
      (mockworld_eval.runner: a process per trial forked from a template that imported the
      benchmarks), J at a time, against the replay model server at URL, taking the groups in turn;
      prints one JSON line per trial on stdout (reward, detail, termination, failure, steps, wall
      and CPU seconds). With --stop-after S it starts no trial after S seconds (the rest are not run).

Nothing here re-implements a benchmark: handler, checker, orchestrator and evaluator are the packages'.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from mockworld_eval import environment

environment.prepare()

from loguru import logger  # noqa: E402

logger.remove()  # tau2 logs its registry at DEBUG when imported; the trials log to their own files
logger.add(sys.stderr, level="WARNING")

from mockworld_eval.bfcl_trial import entry_ids  # noqa: E402
from mockworld_eval.contract import BFCL_CATEGORIES, TAU2_DOMAINS  # noqa: E402
from mockworld_eval.replay import bfcl_plans, task_key, tau2_plan  # noqa: E402
from mockworld_eval.runner import run_trial_process  # noqa: E402
from mockworld_eval.tau2_trial import task_ids  # noqa: E402

ALL_GROUPS = [("bfcl", c) for c in BFCL_CATEGORIES] + [("tau2", d) for d in TAU2_DOMAINS]


def plan(args: argparse.Namespace) -> int:
    groups = ALL_GROUPS
    if args.groups:
        groups = [tuple(g.split("/", 1)) for g in args.groups.split(",")]
    entries, plans = [], {}
    for benchmark, group in groups:
        ids = entry_ids(group) if benchmark == "bfcl" else task_ids(group, "base")
        ids = ids[: args.limit] if args.limit else ids
        by_id = bfcl_plans(group, ids) if benchmark == "bfcl" else {t: tau2_plan(group, t) for t in ids}
        for task_id in ids:
            plans[task_key(benchmark, group, task_id, 0)] = by_id[task_id]
            entries.append({"benchmark": benchmark, "group": group, "taskId": task_id})
    with open(args.out, "w") as out:
        json.dump({"entries": entries, "plans": plans}, out)
    print(f"[evaluation-replay] {len(entries)} entries planned", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    with open(args.entries) as f:
        entries = json.load(f)["entries"]
    printing = threading.Lock()

    def one(entry: dict) -> dict:
        spec = {
            "evaluationId": "bench-evaluation-replay",
            "benchmark": entry["benchmark"],
            "group": entry["group"],
            "taskId": entry["taskId"],
            "trial": 0,
            "trials": 1,
            "policy": {"baseUrl": args.url, "model": "replay-policy"},
        }
        if entry["benchmark"] == "tau2":
            spec["user"] = {"baseUrl": args.url, "model": "replay-user"}
        started = time.monotonic()
        try:
            outcome = run_trial_process(json.dumps(spec), heartbeat=lambda steps: None, interval_s=1.0)
        except Exception as error:  # noqa: BLE001 - a trial that cannot run is a finding, reported
            outcome = {"reward": 0.0, "termination": "error", "steps": 0, "failure": f"{type(error).__name__}: {error}",
                       "detail": None, "cpu_seconds": 0.0, "trajectory": None}
        wall = time.monotonic() - started
        reward_info = (outcome.get("trajectory") or {}).get("reward_info") if entry["benchmark"] == "tau2" else None
        return {
            **entry,
            "reward": outcome["reward"],
            "valid": outcome["reward"] >= 1.0 and outcome.get("failure") is None,
            "termination": outcome["termination"],
            "steps": outcome["steps"],
            "failure": outcome.get("failure"),
            "detail": outcome.get("detail"),
            # tau2: the evaluator's breakdown, kept for an entry that did not score 1
            "rewardInfo": reward_info if reward_info and outcome["reward"] < 1.0 else None,
            "wallSeconds": round(wall, 3),
            "cpuSeconds": round(float(outcome.get("cpu_seconds") or 0.0), 3),
        }

    # Round robin over the groups: a run stopped early (--stop-after) has measured every group.
    by_group: dict[tuple, list] = {}
    for entry in entries:
        by_group.setdefault((entry["benchmark"], entry["group"]), []).append(entry)
    queue = [g[i] for i in range(max(map(len, by_group.values()), default=0)) for g in by_group.values() if i < len(g)]
    deadline = time.monotonic() + args.stop_after if args.stop_after else None

    def guarded(entry: dict):
        if deadline is not None and time.monotonic() > deadline:
            return None  # not started: the run's time is up
        return one(entry)

    done = 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(guarded, e) for e in queue]
        for future in as_completed(futures):
            result = future.result()
            if result is None:
                continue
            done += 1
            with printing:
                print(json.dumps(result, default=str), flush=True)
                if done % 20 == 0 or not result["valid"]:
                    mark = "" if result["valid"] else f"  NOT VALID: {result['detail'] or result['failure']}"
                    print(f"[evaluation-replay] {done}/{len(entries)} {result['group']}/{result['taskId']}{mark}",
                          file=sys.stderr, flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="evaluation-replay.py")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--groups", default="")
    p.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--url", required=True)
    r.add_argument("--entries", required=True)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--stop-after", type=float, default=0, help="start no trial after this many seconds")
    args = parser.parse_args()
    return plan(args) if args.command == "plan" else run(args)


if __name__ == "__main__":
    sys.exit(main())
