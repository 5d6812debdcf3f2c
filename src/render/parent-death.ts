/**
 * A worker ends when its server does, even in the middle of a compile,
 * when native code holds its event loop and it would never see its IPC
 * channel close (a server killed with SIGKILL ends nothing by itself).
 *
 * Where `setpriv` (util-linux, in every Debian and in the image) can set
 * it, the worker is started with the kernel's parent-death signal set to
 * SIGKILL: the kernel ends it with its server, and nothing in the worker
 * runs for it. Elsewhere, and in a worker started setuid or with file
 * capabilities (the kernel clears the signal then), the worker watches its
 * parent from a thread of its own (`exitWithParent`): a second V8 isolate, about 55 ms of CPU at each
 * worker's start on a 2-core VM (a third of the start) and a wake every
 * 250 ms. The worker is told which by an argument (KILLED_WITH_PARENT).
 *
 * A server that dies before the signal is set leaves a worker whose IPC
 * channel is already closed: it ends at its start ('disconnect').
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

/** The worker's argument when the kernel ends it with its server. */
export const KILLED_WITH_PARENT = '--killed-with-parent';

/** How the pool starts a worker: the program, and what comes before Node's own flags. */
export interface WorkerLaunch {
  execPath: string;
  /** Arguments before Node's flags (setpriv's, then Node's path), or none. */
  prefix: string[];
  /** Arguments after the worker's script. */
  args: string[];
  /** Whether the kernel ends workers with the server (else each one's thread does). */
  byKernel: boolean;
  /** How workers end with the server, for the log at start. */
  description: string;
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const path = resolve(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/**
 * setpriv, if it is on the PATH and sets the signal: tried once on itself
 * (`--version`), so that one too old to know `--pdeathsig` (util-linux
 * before 2.33), or a system that refuses the call, leaves the thread in place
 * rather than workers that cannot start.
 */
function setpriv(): string | undefined {
  const path = onPath('setpriv');
  if (!path) return undefined;
  try {
    execFileSync(path, ['--pdeathsig', 'KILL', '--', path, '--version'], { stdio: 'ignore', timeout: 5000 });
    return path;
  } catch {
    return undefined;
  }
}

let launch: WorkerLaunch | undefined;

/** How workers are started in this process (looked up once). */
export function workerLaunch(): WorkerLaunch {
  if (!launch) {
    const path = setpriv();
    launch = path
      ? {
          execPath: path,
          prefix: ['--pdeathsig', 'KILL', '--', process.execPath],
          args: [KILLED_WITH_PARENT],
          byKernel: true,
          description: 'workers end with the server: started by setpriv with the parent-death signal',
        }
      : {
          execPath: process.execPath,
          prefix: [],
          args: [],
          byKernel: false,
          description:
            'workers end with the server by a thread of their own that watches it (setpriv from util-linux 2.33 or later would spare each one about 12 MiB)',
        };
  }
  return launch;
}

/** AT_SECURE in the process's auxiliary vector (its type is 23): a setuid or file-capability start, for which the kernel clears the parent-death signal. */
function secureExec(): boolean {
  try {
    const auxv = readFileSync('/proc/self/auxv');
    for (let at = 0; at + 16 <= auxv.length; at += 16) {
      if (auxv.readBigUInt64LE(at) === 23n) return auxv.readBigUInt64LE(at + 8) !== 0n;
    }
  } catch {
    /* no /proc: as if secure */
    return true;
  }
  return false;
}

/**
 * In the worker: unless the kernel ends it with its server (KILLED_WITH_PARENT,
 * and not a secure start, which clears the signal), a small thread checks every
 * 250 ms that its parent is the same and ends the process if not. Either way
 * the worker ends when its IPC channel closes.
 */
export function exitWithParent(): void {
  if (!process.argv.includes(KILLED_WITH_PARENT) || secureExec()) {
    const watchdog = new Worker(
      `const { workerData } = require('node:worker_threads');
       setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 250);`,
      { eval: true, workerData: process.ppid },
    );
    watchdog.unref();
  }
  process.on('disconnect', () => process.exit(0));
}
