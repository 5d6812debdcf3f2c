/**
 * A worker ends when its server does, even in the middle of a compile,
 * when native code holds its event loop and it would never see its IPC
 * channel close (a server killed with SIGKILL ends nothing by itself).
 *
 * Where `setpriv` (util-linux, in every Debian and in the image) can set
 * it, the worker is started with the kernel's parent-death signal set to
 * SIGKILL: the kernel ends it with its server, and nothing in the worker
 * runs for it. Elsewhere the worker watches its parent from a thread of its
 * own (`exitWithParent`): a second V8 isolate, about 55 ms of CPU at each
 * worker's start on a 2-core VM (a third of the start) and a wake every
 * 250 ms. The worker is told which by an argument (KILLED_WITH_PARENT).
 *
 * A server that dies before the signal is set leaves a worker whose IPC
 * channel is already closed: it ends at its start ('disconnect').
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
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
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** setpriv, if it is on the PATH and knows `--pdeathsig` (util-linux 2.33 and later). */
function setpriv(): string | undefined {
  const path = onPath('setpriv');
  if (!path) return undefined;
  try {
    return execFileSync(path, ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes('--pdeathsig')
      ? path
      : undefined;
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
      ? { execPath: path, prefix: ['--pdeathsig', 'KILL', '--', process.execPath], args: [KILLED_WITH_PARENT] }
      : { execPath: process.execPath, prefix: [], args: [] };
  }
  return launch;
}

/**
 * In the worker: unless the kernel ends it with its server (KILLED_WITH_PARENT),
 * a small thread checks every 250 ms that its parent is the same and ends
 * the process if not. Either way the worker ends when its IPC channel closes.
 */
export function exitWithParent(): void {
  if (!process.argv.includes(KILLED_WITH_PARENT)) {
    const watchdog = new Worker(
      `const { workerData } = require('node:worker_threads');
       setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 250);`,
      { eval: true, workerData: process.ppid },
    );
    watchdog.unref();
  }
  process.on('disconnect', () => process.exit(0));
}
