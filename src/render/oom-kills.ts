/**
 * The kernel's out-of-memory kills in the service's cgroup: `oom_kill` of
 * `memory.events` (cgroup v2) or of `memory.oom_control` (v1), which count
 * the processes of the cgroup killed by an OOM killer, its own limit's or
 * the whole machine's. A worker ended by SIGKILL was the OOM killer's if a
 * kill was counted that no other worker's end has claimed: its compile
 * outgrew the memory there was, before the pool's own cap (sampled,
 * pool.ts) caught it. The count is read at every worker's end, so two
 * workers killed at once claim one kill each. An OOM kill of another
 * process of the cgroup (a shell in the container) is taken for the next
 * worker killed. Where no such file can be read, a SIGKILL the pool did not
 * send is taken as one from outside.
 */
import { existsSync, readFileSync } from 'node:fs';

/** The file of this process's memory cgroup that counts its OOM kills, if there is one. */
function eventsFile(): string | undefined {
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const path = (prefix: RegExp) =>
    lines
      .find((l) => prefix.test(l))
      ?.replace(prefix, '')
      .replace(/\/$/, '');
  const v2 = path(/^0::/);
  const v1 = path(/^\d+:memory:/);
  // In a container, /proc/self/cgroup may name the host's path while /sys/fs/cgroup is the container's own cgroup.
  const candidates = [
    v2 === undefined ? undefined : `/sys/fs/cgroup${v2}/memory.events`,
    v1 === undefined ? undefined : `/sys/fs/cgroup/memory${v1}/memory.oom_control`,
    v2 === undefined ? undefined : '/sys/fs/cgroup/memory.events',
    v1 === undefined ? undefined : '/sys/fs/cgroup/memory/memory.oom_control',
  ];
  return candidates.find((file) => file !== undefined && existsSync(file));
}

function readKills(file: string | undefined): number | undefined {
  if (!file) return undefined;
  try {
    const match = /^oom_kill (\d+)$/m.exec(readFileSync(file, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

export class OomKills {
  private readonly file = eventsFile();
  private seen = readKills(this.file);
  /** Kills counted and not yet claimed by a worker's end. */
  private unclaimed = 0;

  /** At every worker's end: whether the OOM killer ended it (`killed`: it ended by SIGKILL, and claims a kill counted). */
  ended(killed: boolean): boolean {
    const now = readKills(this.file);
    if (now !== undefined && this.seen !== undefined && now > this.seen) this.unclaimed += now - this.seen;
    this.seen = now ?? this.seen;
    if (!killed || this.unclaimed === 0) return false;
    this.unclaimed--;
    return true;
  }
}
