/**
 * The kernel's out-of-memory kills in the service's cgroup: `oom_kill` of
 * `memory.events` (cgroup v2) or of `memory.oom_control` (v1), which count
 * the processes of the cgroup killed by an OOM killer, its own limit's or
 * the whole machine's. A worker ended by a SIGKILL the pool did not send
 * was the OOM killer's if the count grew since the last look: its compile
 * outgrew the memory there was, before the pool's own cap (sampled,
 * pool.ts) caught it. Where neither file can be read, such a kill is taken
 * as one from outside.
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
  const candidates = [
    v2 === undefined ? undefined : `/sys/fs/cgroup${v2}/memory.events`,
    v1 === undefined ? undefined : `/sys/fs/cgroup/memory${v1}/memory.oom_control`,
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

  /** Whether the count grew since the last look (false where it cannot be read). */
  grew(): boolean {
    const now = readKills(this.file);
    const grew = now !== undefined && this.seen !== undefined && now > this.seen;
    this.seen = now ?? this.seen;
    return grew;
  }
}
