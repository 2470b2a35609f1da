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
import { locateSandbox, runPython, type SandboxInstall } from '../../activities/sandbox/index.js';
import type { SandboxCaps } from '../../schemas/reasoning-sandbox.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
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
