import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createActivities } from '../../activities/index.js';
import pg from 'pg';
import { createSandboxHost } from '../../activities/sandbox/host.js';
import { locateSandbox, runPython, type SandboxInstall } from '../../activities/sandbox/index.js';
import type { SandboxCaps } from '../../schemas/reasoning-sandbox.js';
import { ADMIN_URL, createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { eventually } from '../../testkit/temporal.js';

/**
 * The `python` tool's sandbox against hostile programs, for real: bubblewrap from the sandbox venv
 * (deploy/sandbox-venv.sh, run by `npm test` first), CPython inside it. Each program is refused or
 * killed with a clear result; the worker (this process) is unharmed: no sandbox process outlives
 * its run, its memory is its own, a correct program still computes the right answer afterwards,
 * and a real Temporal worker running the same programs through the activity keeps serving.
 */

/** Caps small enough that a killed program costs the suite seconds, not the defaults' 20 s. */
const FAST: Partial<SandboxCaps> = { cpuSeconds: 2, wallSeconds: 4, outputBytes: 8_192 };

/** Processes of sandbox uids (a root worker gives each run a fresh uid of at least 1,000,000). */
function sandboxProcesses(): string[] {
  return readdirSync('/proc').filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1];
      return Number(uid) >= 1_000_000;
    } catch {
      return false; // gone meanwhile
    }
  });
}

const MiB = 1024 * 1024;

/** The cgroup all sandboxed runs' cgroups are made in (activities/sandbox/cgroup.ts; v1 or v2). */
const RUNS_PARENT = ['/sys/fs/cgroup/memory/mockworld-sandbox', '/sys/fs/cgroup/mockworld-sandbox'].find(
  (dir) => existsSync(dir),
);

/**
 * Memory the sandboxed runs hold together now: the sum of their cgroups' usage counters (exact,
 * unlike memory.stat, which the kernel refreshes every few seconds). Not the parent's counter:
 * that also holds the page cache of files the runs read (python's own), which cgroup v1 hands to
 * the parent when a run's cgroup goes: reclaimable, shared with the host, outliving the runs.
 */
function runsMemory(): number {
  if (!RUNS_PARENT) return 0;
  let held = 0;
  for (const entry of readdirSync(RUNS_PARENT, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith('run-')) continue;
    const dir = path.join(RUNS_PARENT, entry.name);
    const v1 = path.join(dir, 'memory.usage_in_bytes');
    try {
      held += Number(readFileSync(existsSync(v1) ? v1 : path.join(dir, 'memory.current'), 'utf8'));
    } catch {
      // the run ended and its cgroup went between the listing and the read
    }
  }
  return held;
}

/** Run cgroups of this machine's sandboxed runs now. */
function countRunCgroups(): number {
  const parent = RUNS_PARENT;
  if (!parent) return 0;
  return readdirSync(parent, { withFileTypes: true }).filter(
    (e) => e.isDirectory() && e.name.startsWith('run-'),
  ).length;
}

describe('the python sandbox against hostile programs', () => {
  let install: SandboxInstall;
  let hostDir: string;
  const canary = `canary-${randomBytes(12).toString('hex')}`;
  const rssBefore = process.memoryUsage().rss;
  const run = (code: string, caps: Partial<SandboxCaps> = FAST) => runPython({ install }, { code, caps });

  beforeAll(async () => {
    install = locateSandbox();
    // A secret in the worker's environment and a file of the worker's, both to be out of reach.
    process.env.MOCKWORLD_SANDBOX_CANARY = canary;
    hostDir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-sandbox-host-'));
    await writeFile(path.join(hostDir, 'secret.txt'), canary);
  });
  afterAll(async () => {
    delete process.env.MOCKWORLD_SANDBOX_CANARY;
    await rm(hostDir, { recursive: true, force: true });
  });

  it('computes a correct answer with numpy and sympy in real CPython', async () => {
    const result = await run(
      [
        'import numpy as np, sympy as sp, sys',
        'x = sp.Symbol("x")',
        'print(sp.solve(x**2 - 5*x + 6, x))',
        'print(sp.integrate(sp.exp(-x**2), (x, -sp.oo, sp.oo)))',
        'print(int(np.linalg.det(np.array([[2, 1], [1, 3]])).round()))',
        'print(sys.implementation.name, sys.version_info[:2])',
      ].join('\n'),
      { wallSeconds: 60 },
    );
    expect(result).toMatchObject({ outcome: 'ok', exitCode: 0, cap: null, stderr: '' });
    expect(result.stdout).toBe('[2, 3]\nsqrt(pi)\n5\ncpython (3, 11)\n');
  });

  it('kills an infinite loop on its CPU cap', async () => {
    const result = await run('while True:\n    pass', { ...FAST, wallSeconds: 30 });
    expect(result).toMatchObject({ outcome: 'killed', cap: 'cpu_time', signal: 'SIGXCPU' });
    expect(result.message).toBe('killed: the program used more than its 2 s of CPU time');
  });

  it('kills a program that waits forever on its wall-time cap', async () => {
    const started = Date.now();
    const result = await run('import time\ntime.sleep(3600)');
    expect(result).toMatchObject({ outcome: 'killed', cap: 'wall_time' });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('holds a fork bomb to its process cap and leaves no process behind', async () => {
    // First the cap itself: children that stay alive, counted until fork fails.
    const counted = await run(
      [
        'import os, time',
        'children = 0',
        'try:',
        '    while True:',
        '        if os.fork() == 0:',
        '            time.sleep(60)',
        '            os._exit(0)',
        '        children += 1',
        'except OSError as error:',
        '    print(children, error.errno)',
      ].join('\n'),
      { ...FAST, processes: 6 },
    );
    expect(counted.outcome).toBe('ok');
    const [children, errno] = counted.stdout.trim().split(' ').map(Number);
    expect(children).toBeLessThanOrEqual(5); // the cap counts the parent too
    expect(errno).toBe(os.constants.errno.EAGAIN);
    // Then a real bomb: every process forks forever, failures ignored; the wall-time cap ends it.
    const bomb = await run(
      'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass',
    );
    expect(bomb).toMatchObject({ outcome: 'killed', cap: 'wall_time' });
    // The sleeping children of the first program and the bomb's processes all died with their run
    // (killed when it ended; the kernel may take a moment to reap them).
    await eventually(async () => sandboxProcesses().length === 0, 5_000, 50);
  });

  it('stops a memory hog at its memory cap', async () => {
    const result = await run('chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))', {
      ...FAST,
      memoryMiB: 512,
    });
    expect(result).toMatchObject({ outcome: 'killed', cap: 'memory' });
    expect(result.message).toBe('killed: the program needed more than its 512 MiB of memory');
    expect(result.stderr).toContain('MemoryError');
  });

  it('has no network: a connect to a server on the host fails and the server sees nothing', async () => {
    let accepted = 0;
    const server = net.createServer((socket) => {
      accepted += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const result = await run(
        [
          'import socket',
          'print(sorted(name for _, name in socket.if_nameindex()))',
          `socket.create_connection(("127.0.0.1", ${port}), timeout=3)`,
        ].join('\n'),
      );
      expect(result.outcome).toBe('error');
      expect(result.stdout).toBe("['lo']\n"); // its own loopback, nothing else
      expect(result.stderr).toContain('ConnectionRefusedError');
      expect(accepted).toBe(0);
    } finally {
      server.close();
    }
  });

  it("cannot read /etc/passwd, the worker's environment or its files", async () => {
    const passwd = await run('print(open("/etc/passwd").read())');
    expect(passwd.outcome).toBe('error');
    expect(passwd.stderr).toContain("FileNotFoundError: [Errno 2] No such file or directory: '/etc/passwd'");
    expect(passwd.stdout).not.toContain('root:');

    // Every environment it can see, and every file it can reach, searched for the canary.
    const search = await run(
      [
        'import os',
        // Reversed, so the program's own source (in /scratch) does not hold the canary.
        `canary = ${JSON.stringify([...canary].reverse().join(''))}[::-1]`,
        'found = [k for k, v in os.environ.items() if canary in v]',
        'for pid in os.listdir("/proc"):',
        '    if pid.isdigit():',
        '        try:',
        '            if canary.encode() in open(f"/proc/{pid}/environ", "rb").read(): found.append(pid)',
        '        except OSError:',
        '            pass',
        'for root, dirs, files in os.walk("/"):',
        // The system's programs and the interpreter are left out: gigabytes the canary is not in.
        `    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/dev", "/usr", ${JSON.stringify(install.basePrefix)})]`,
        '    for name in files:',
        '        try:',
        '            with open(os.path.join(root, name), "rb") as handle:',
        '                if canary.encode() in handle.read(): found.append(os.path.join(root, name))',
        '        except OSError:',
        '            pass',
        'print("found:", found)',
        `for path in (${JSON.stringify(path.join(REPO_ROOT, 'package.json'))}, ${JSON.stringify(path.join(hostDir, 'secret.txt'))}):`,
        '    print(path, os.path.exists(path))',
        'print(sorted(os.listdir("/")))',
      ].join('\n'),
      { ...FAST, wallSeconds: 60, cpuSeconds: 30 },
    );
    expect(search.outcome).toBe('ok');
    const lines = search.stdout.trim().split('\n');
    expect(lines[0]).toBe('found: []');
    expect(lines[1]).toBe(`${path.join(REPO_ROOT, 'package.json')} False`);
    expect(lines[2]).toBe(`${path.join(hostDir, 'secret.txt')} False`);
    // What it sees of the file system: the system's programs, its venv, its scratch; no /etc,
    // /home or /work.
    expect(lines[3]).not.toMatch(/'etc'|'home'|'work'/);
    expect(search.stdout).not.toContain(canary);

    // The command lines of the sandbox's processes (bubblewrap is its PID 1) name no host path:
    // bubblewrap reads the host paths it binds from a descriptor. (The mount table,
    // /proc/self/mountinfo, still shows where the venv and the interpreter lie on the host.)
    const commandLines = await run(
      [
        'import os',
        'for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):',
        '    print(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode())',
      ].join('\n'),
    );
    expect(commandLines.outcome).toBe('ok');
    expect(commandLines.stdout).toContain('/sandbox/bootstrap/bootstrap.py');
    for (const hostPath of [REPO_ROOT, install.venv, install.bwrap, install.basePrefix])
      expect(commandLines.stdout).not.toContain(hostPath);
  });

  it('writes only to its scratch directory, which is gone after the run', async () => {
    const targets = [
      '/escape.txt',
      '/usr/escape.txt',
      '/sandbox/venv/escape.txt',
      path.join(REPO_ROOT, 'escape.txt'),
      path.join(hostDir, 'escape.txt'),
    ];
    const result = await run(
      [
        'import os',
        `for target in ${JSON.stringify(targets)}:`,
        '    try:',
        '        open(target, "w").write("x")',
        '        print("WROTE", target)',
        '    except OSError as error:',
        '        print("refused", target, error.strerror)',
        'open("/scratch/ok.txt", "w").write("fine")',
        'print(open("/tmp/ok.txt").read())',
      ].join('\n'),
    );
    expect(result.outcome).toBe('ok');
    expect(result.stdout).not.toContain('WROTE');
    expect(result.stdout.match(/^refused /gm)).toHaveLength(targets.length);
    expect(result.stdout.trim().endsWith('fine')).toBe(true);
    for (const target of targets.slice(3)) expect(existsSync(target)).toBe(false);
    // The next run starts with an empty scratch.
    const next = await run('import os\nprint(os.listdir("/scratch"))');
    expect(next.stdout).toBe("['main.py']\n");
    // A full scratch is the program's error, not the worker's disk.
    const fill = await run('open("/scratch/big", "wb").write(b"x" * (64 * 1024 * 1024))', {
      ...FAST,
      scratchMiB: 4,
    });
    expect(fill.outcome).toBe('error');
    expect(fill.stderr).toMatch(/No space left on device|File too large/);
  });

  it('kills a program that prints without end at its output cap', async () => {
    const result = await run('while True:\n    print("spam" * 100)');
    expect(result).toMatchObject({ outcome: 'killed', cap: 'output', truncated: true });
    expect(result.stdout.length + result.stderr.length).toBe(8_192);
  });

  it('refuses namespaces, mounts, ptrace, the key store and BPF with EPERM (seccomp)', async () => {
    const result = await run(
      [
        'import ctypes, errno, os, platform, threading',
        'libc = ctypes.CDLL(None, use_errno=True)',
        "NR = {'x86_64': {'keyctl': 250, 'bpf': 321, 'ptrace': 101},",
        "      'aarch64': {'keyctl': 219, 'bpf': 280, 'ptrace': 117}}[platform.machine()]",
        'def said(rc):',
        "    return 'allowed' if rc == 0 else errno.errorcode[ctypes.get_errno()]",
        "print('unshare', said(libc.unshare(0x10000000)))  # CLONE_NEWUSER",
        "print('mount', said(libc.mount(b'none', b'/scratch', b'tmpfs', 0, None)))",
        "print('ptrace', said(libc.syscall(NR['ptrace'], 16, 1, 0, 0)))  # PTRACE_ATTACH to pid 1",
        "print('keyctl', said(libc.syscall(NR['keyctl'], 0, 0, 0, 0)))",
        "print('bpf', said(libc.syscall(NR['bpf'], 0, 0, 0)))",
        '# What a computation needs still works: threads and fork.',
        't = threading.Thread(target=print, args=("thread",)); t.start(); t.join()',
        'pid = os.fork()',
        'if pid == 0: os._exit(7)',
        "print('fork', os.waitpid(pid, 0)[1] >> 8)",
      ].join('\n'),
    );
    expect(result.outcome).toBe('ok');
    expect(result.stdout.trim().split('\n')).toEqual([
      'unshare EPERM',
      'mount EPERM',
      'ptrace EPERM',
      'keyctl EPERM',
      'bpf EPERM',
      'thread',
      'fork 7',
    ]);
  });

  it('bounds runs as a whole: children holding 900 MiB each, limit + 4 runs at once, host memory kept', async () => {
    // Each run forks 8 children that each fill 900 MiB: 7 GiB per run without a whole-run bound.
    // The worker runs 2 at a time (the rest wait in its queue), each in a 384 MiB cgroup.
    const host = createSandboxHost({ concurrency: 2, cgroup: 'required' });
    const runMiB = 384;
    const hog = [
      'import os, time',
      'children = []',
      'for _ in range(8):',
      '    pid = os.fork()',
      '    if pid == 0:',
      "        block = b'x' * (900 * 1024 * 1024)",
      '        time.sleep(2)',
      '        os._exit(0)',
      '    children.append(pid)',
      'for pid in children:',
      '    os.waitpid(pid, 0)',
      "print('parent done')",
    ].join('\n');
    const caps = {
      ...FAST,
      wallSeconds: 20,
      cpuSeconds: 10,
      memoryMiB: 2048,
      processes: 16,
      runMemoryMiB: runMiB,
    };
    const available = () =>
      Number(/^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
    const before = available();
    let lowest = before;
    let mostRunning = 0;
    let mostHeld = 0;
    const sampler = setInterval(() => {
      lowest = Math.min(lowest, available());
      mostHeld = Math.max(mostHeld, runsMemory());
      mostRunning = Math.max(mostRunning, countRunCgroups());
    }, 10);
    const runs = await Promise.all(
      Array.from({ length: host.slots.size + 4 }, () => runPython({ install, host }, { code: hog, caps })),
    ).finally(() => clearInterval(sampler));
    for (const result of runs) {
      expect(result).toMatchObject({ outcome: 'killed', cap: 'memory' });
      expect(result.message).toBe(
        `killed: the program's processes together needed more than the run's ${runMiB} MiB of memory`,
      );
    }
    // Two runs' cgroups at most, holding together no more than their two bounds by the kernel's
    // own accounting. MemAvailable moves with whatever else a busy machine does meanwhile (and
    // lags the kernel's frees), hence its margin; unbounded, the runs would take 2 × 7 GiB of it.
    expect(mostRunning).toBeLessThanOrEqual(host.slots.size);
    expect(mostHeld / MiB).toBeLessThanOrEqual(host.slots.size * runMiB + 1);
    expect(mostHeld / MiB).toBeGreaterThan(runMiB); // the runs did push against their bounds
    expect((before - lowest) / MiB).toBeLessThan(host.slots.size * runMiB + 768);
    // The machine's PostgreSQL is alive, and nothing of the runs is left.
    const postgres = new pg.Client({ connectionString: ADMIN_URL });
    await postgres.connect();
    expect((await postgres.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await postgres.end();
    await eventually(async () => sandboxProcesses().length === 0 && countRunCgroups() === 0, 5_000, 50);
  });

  it('leaves the worker unharmed: no stray process, its memory, and correct answers afterwards', async () => {
    await eventually(async () => sandboxProcesses().length === 0, 5_000, 50);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(300 * 1024 * 1024);
    const result = await run('print(sum(i * i for i in range(10)))');
    expect(result).toMatchObject({ outcome: 'ok', stdout: '285\n' });
  });
});

describe('hostile programs through the pythonTool activity on a real worker', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('answers each with a tool error and keeps serving', async () => {
    const address = inject('temporalAddress');
    const connection = await NativeConnection.connect({ address });
    const taskQueue = `sandbox-${randomBytes(4).toString('hex')}`;
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./python-sandbox.workflows.ts', import.meta.url)),
      activities: createActivities({ databaseUrl: db.url }),
    });
    const client = new Client({ connection: await Connection.connect({ address }) });
    try {
      const contents = await worker.runUntil(
        client.workflow.execute('SandboxedPrograms', {
          args: [
            [
              'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass',
              'x = bytearray(8 * 1024**3)',
              'print(open("/etc/passwd").read())',
              // Light enough to stay far under the CPU cap on a busy machine (importing sympy is not).
              'print(sum(i * i for i in range(10)))',
            ],
            3,
          ],
          taskQueue,
          workflowId: `sandbox-${randomBytes(4).toString('hex')}`,
        }),
      );
      expect(contents[0]).toBe('Error: killed: the program ran longer than its 3 s of wall time.');
      expect(contents[1]).toMatch(/^Error: killed: the program needed more than its 1024 MiB of memory\./);
      expect(contents[2]).toMatch(
        /^Error: the program exited with code 1\.\n\[stderr\]\n[\s\S]*FileNotFoundError/,
      );
      expect(contents[3]).toBe('285');
    } finally {
      await connection.close();
      await client.connection.close();
    }
    await eventually(async () => sandboxProcesses().length === 0, 5_000, 50);
  });
});
