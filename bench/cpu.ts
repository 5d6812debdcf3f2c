/**
 * CPU time of processes, in milliseconds: of a process's threads from the
 * scheduler's count in nanoseconds (/proc/PID/task/TID/schedstat), and of a
 * process with its children already gone from /proc/PID/stat (utime + stime,
 * cutime + cstime). Wall time on a shared 2-core machine says as much about
 * the neighbours as about the service; CPU time says what the service itself
 * spent.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { childPids } from '../test/support/service.js';

/** Clock ticks per second of /proc times: USER_HZ, 100 on Linux x86-64 and arm64. */
const TICKS_PER_SECOND = 100;

interface Times {
  /** utime + stime of the process itself. */
  own: number;
  /** cutime + cstime: its children that have exited and been waited for. */
  reapedChildren: number;
}

function times(pid: number): Times {
  try {
    // Fields after the command name (which may hold spaces), counted from field 3 (state).
    const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ');
    const at = (field: number) => Number(fields[field - 3]);
    return { own: ((at(14) + at(15)) * 1000) / TICKS_PER_SECOND, reapedChildren: ((at(16) + at(17)) * 1000) / TICKS_PER_SECOND };
  } catch {
    return { own: 0, reapedChildren: 0 }; // exited between listing and reading
  }
}

/**
 * CPU ms the scheduler counted for the given threads of a process, from
 * their schedstat (nanoseconds). /proc/PID/stat counts 10 ms ticks: the
 * server's 40 ms over a block of eight 50-page reports are four ticks, give
 * or take one. A thread that ended during a measure drops out of the sum;
 * the server's threads last as long as it does.
 */
function scheduledMs(pid: number, threads: string[]): number {
  let ns = 0;
  for (const tid of threads) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // ended between listing and reading
    }
  }
  return ns / 1e6;
}

/** CPU ms of a process's main thread alone (in Node, the event loop's thread). */
export function mainThreadCpuMs(pid: number): number {
  return scheduledMs(pid, [String(pid)]);
}

/** CPU ms of the process alone (all its threads). */
export function processCpuMs(pid: number): number {
  try {
    return scheduledMs(pid, readdirSync(`/proc/${pid}/task`));
  } catch {
    return 0; // exited
  }
}

/**
 * CPU ms of the service: the server, the workers alive now, and the workers
 * that have exited (recycled or killed), which the server has waited for.
 */
export function serviceCpuMs(serverPid: number): number {
  const server = times(serverPid);
  return server.own + server.reapedChildren + childPids(serverPid).reduce((sum, pid) => sum + times(pid).own, 0);
}
