/**
 * CPU time of processes, from /proc/PID/stat (utime + stime, and cutime +
 * cstime for children already gone), in milliseconds. Wall time on a shared
 * 2-core machine says as much about the neighbours as about the service;
 * CPU time says what the service itself spent.
 */
import { readFileSync } from 'node:fs';
import { childPids } from './memory.js';

/** Clock ticks per second of /proc times: USER_HZ, 100 on Linux x86-64 and arm64. */
const TICKS_PER_SECOND = 100;

interface Times {
  /** utime + stime of the process itself. */
  own: number;
  /** cutime + cstime: its children that have exited and been waited for. */
  reapedChildren: number;
}

function times(pid: number, path = `/proc/${pid}/stat`): Times {
  try {
    // Fields after the command name (which may hold spaces), counted from field 3 (state).
    const fields = readFileSync(path, 'latin1').split(') ')[1]!.split(' ');
    const at = (field: number) => Number(fields[field - 3]);
    return { own: ((at(14) + at(15)) * 1000) / TICKS_PER_SECOND, reapedChildren: ((at(16) + at(17)) * 1000) / TICKS_PER_SECOND };
  } catch {
    return { own: 0, reapedChildren: 0 }; // exited between listing and reading
  }
}

/** CPU ms of a process's main thread alone (in Node, the event loop's thread). */
export function mainThreadCpuMs(pid: number): number {
  return times(pid, `/proc/${pid}/task/${pid}/stat`).own;
}

/** CPU ms of the process alone (all its threads). */
export function processCpuMs(pid: number): number {
  return times(pid).own;
}

/**
 * CPU ms of the service: the server, the workers alive now, and the workers
 * that have exited (recycled or killed), which the server has waited for.
 */
export function serviceCpuMs(serverPid: number): number {
  const server = times(serverPid);
  return server.own + server.reapedChildren + childPids(serverPid).reduce((sum, pid) => sum + times(pid).own, 0);
}
