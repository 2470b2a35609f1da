/**
 * Test hosts on one machine: each "host" is a Linux network namespace joined to a bridge by a
 * veth link, so its processes reach the others only over that link and lose them when it goes
 * down, as a machine whose switch port fails does. The caller's own namespace is the server host
 * (the bridge's address): Temporal, PostgreSQL and the model gateway listen there. Hosts share the
 * machine's filesystem and PID space (like workers on one NFS, seen from one operator's shell), so
 * a test still ends its processes by their IDs.
 *
 * Needs root (CAP_NET_ADMIN) and iproute2's `ip`; {@link hostNetworkUnsupported} says why not.
 * Everything is named after the caller's PID, so parallel test files never share a namespace,
 * link or subnet, and {@link HostNetwork.teardown} removes exactly what this network made.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);

const ip = async (...args: string[]) => (await exec('ip', args)).stdout;

/** One host: a namespace, its address, and the faults a test can give it. */
export interface TestHost {
  readonly name: string;
  /** The namespace's name (`ip netns exec <namespace>`). */
  readonly namespace: string;
  readonly address: string;
  /** A command prefix that runs a program on this host (for spawn). */
  readonly launcher: readonly string[];
  /** Takes the host's link down: its processes keep running, cut off from everything. */
  cut(): Promise<void>;
  /** Brings the link back up. */
  heal(): Promise<void>;
  /** SIGKILLs every process in the host's namespace at once (a lost machine); returns their PIDs. */
  killAll(): Promise<number[]>;
}

export interface HostNetwork {
  /** The server host's address on the bridge (the caller's own namespace). */
  readonly serverAddress: string;
  /** The hosts' subnet in CIDR form, e.g. for PostgreSQL's pg_hba. */
  readonly subnet: string;
  readonly hosts: readonly TestHost[];
  /** Kills what still runs on the hosts and deletes the namespaces, links and bridge. */
  teardown(): Promise<void>;
}

/** Why this machine cannot build test hosts, or undefined when it can. */
export async function hostNetworkUnsupported(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'test hosts need root (network namespaces)';
  try {
    await ip('netns', 'list');
    return undefined;
  } catch (error) {
    return `iproute2's ip netns does not work here: ${(error as Error).message}`;
  }
}

/** A /24 in 10.231.0.0/16 that no interface of the machine uses yet. */
async function freeSubnet(): Promise<string> {
  const used = await ip('-4', '-o', 'addr');
  for (let i = 0; i < 250; i++) {
    const third = (process.pid + i) % 250;
    if (!used.includes(`10.231.${third}.`)) return `10.231.${third}`;
  }
  throw new Error('no free 10.231.x.0/24 subnet for test hosts');
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Removes the namespaces and bridges of test processes that died without tearing down (a run
 * killed by a timeout): their names carry the PID of the process that made them.
 */
async function sweepAbandoned(): Promise<void> {
  const owner = (tag: string) => parseInt(tag, 36);
  for (const line of (await ip('netns', 'list')).split('\n')) {
    const namespace = /^mw-([0-9a-z]+)-\S+/.exec(line);
    if (namespace && !alive(owner(namespace[1]!))) {
      await killNamespace(namespace[0]);
      await ip('netns', 'del', namespace[0]).catch(() => undefined);
    }
  }
  for (const bridge of (await ip('-o', 'link', 'show', 'type', 'bridge')).matchAll(/ mwbr([0-9a-z]+):/g))
    if (!alive(owner(bridge[1]!))) await ip('link', 'del', `mwbr${bridge[1]}`).catch(() => undefined);
}

/** Creates the bridge and one namespace per name, each with its link up and a route to the others. */
export async function createHostNetwork(names: readonly string[]): Promise<HostNetwork> {
  const reason = await hostNetworkUnsupported();
  if (reason) throw new Error(reason);
  await sweepAbandoned();
  const prefix = await freeSubnet();
  const tag = process.pid.toString(36);
  const bridge = `mwbr${tag}`;
  const made: { namespaces: string[]; links: string[] } = { namespaces: [], links: [bridge] };
  const teardown = async () => {
    for (const namespace of made.namespaces) {
      await killNamespace(namespace);
      await ip('netns', 'del', namespace).catch(() => undefined);
    }
    for (const link of made.links) await ip('link', 'del', link).catch(() => undefined);
  };
  try {
    await ip('link', 'add', bridge, 'type', 'bridge');
    await ip('addr', 'add', `${prefix}.1/24`, 'dev', bridge);
    await ip('link', 'set', bridge, 'up');
    const hosts = [];
    for (const [i, name] of names.entries()) {
      const namespace = `mw-${tag}-${name}`;
      const outside = `mw${tag}h${i}`;
      const address = `${prefix}.${10 + i}`;
      await ip('netns', 'add', namespace);
      made.namespaces.push(namespace);
      await ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', `${outside}i`);
      made.links.push(outside);
      await ip('link', 'set', `${outside}i`, 'netns', namespace);
      await ip('link', 'set', outside, 'master', bridge, 'up');
      const inside = (...args: string[]) => ip('netns', 'exec', namespace, 'ip', ...args);
      await inside('link', 'set', 'lo', 'up');
      await inside('link', 'set', `${outside}i`, 'name', 'eth0');
      await inside('addr', 'add', `${address}/24`, 'dev', 'eth0');
      await inside('link', 'set', 'eth0', 'up');
      await inside('route', 'add', 'default', 'via', `${prefix}.1`);
      hosts.push({
        name,
        namespace,
        address,
        launcher: ['ip', 'netns', 'exec', namespace],
        cut: async () => void (await ip('link', 'set', outside, 'down')),
        heal: async () => void (await ip('link', 'set', outside, 'up')),
        killAll: () => killNamespace(namespace),
      });
    }
    return { serverAddress: `${prefix}.1`, subnet: `${prefix}.0/24`, hosts, teardown };
  } catch (error) {
    await teardown();
    throw error;
  }
}

/** SIGKILLs every process in a namespace and waits until none is left. */
async function killNamespace(namespace: string): Promise<number[]> {
  const pidsIn = async () =>
    (await ip('netns', 'pids', namespace).catch(() => '')).split('\n').filter(Boolean).map(Number);
  const pids = await pidsIn();
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (let i = 0; i < 100 && (await pidsIn()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  return pids;
}
