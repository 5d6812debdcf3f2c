/**
 * Worker process entry: holds one Typst engine, compiles one job at a time
 * and answers over IPC. It is killed from outside when a job overruns;
 * it writes nothing to disk and logs nothing of a job.
 */
import { Worker } from 'node:worker_threads';
import type { EngineOptions, TypstEngine } from './engine.js';
import type { FontCatalog } from './fonts.js';
import type { JobMessage, WorkerMessage } from './protocol.js';
import { TYPST_VERSION } from './typst-version.js';

export { TYPST_VERSION };

function send(message: WorkerMessage): void {
  process.send?.(message);
}

/**
 * If the server dies without ending this process (SIGKILL), the IPC channel
 * closes; but a compile in native code blocks the event loop and would never
 * see it. A small thread watches for the parent to change and ends the process.
 */
function exitWithParent(): void {
  const parent = process.ppid;
  const watchdog = new Worker(
    `const { workerData } = require('node:worker_threads');
     setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 250);`,
    { eval: true, workerData: parent },
  );
  watchdog.unref();
  process.on('disconnect', () => process.exit(0));
}

/** The error and, for the binding's "Failed to load native binding", the first line of each attempt's cause. */
function startFailure(error: unknown): string {
  const { message, cause } = error as Error;
  const causes = Array.isArray(cause) ? cause.map((c) => String((c as Error)?.message ?? c).split('\n')[0]) : [];
  return causes.length > 0 ? `${message} (${causes.join('; ')})` : message;
}

async function main(): Promise<void> {
  const started = performance.now();
  const options = JSON.parse(process.argv[2] ?? '{}') as EngineOptions;
  exitWithParent();
  let engine: TypstEngine;
  let fonts: FontCatalog;
  try {
    // Loaded here, not at the top, so a native module that fails to load is reported, not a crash.
    const { TypstEngine: Engine } = await import('./engine.js');
    const { loadFontCatalog } = await import('./fonts.js');
    fonts = loadFontCatalog();
    engine = new Engine(options, fonts);
  } catch (error) {
    send({ type: 'fatal', message: `Typst engine failed to start: ${startFailure(error)}` });
    process.exit(1);
  }
  const startMs = performance.now() - started;
  send({ type: 'ready', typstVersion: TYPST_VERSION, startMs, fonts: fonts.families, fontBytes: fonts.totalBytes });

  process.on('message', (job: JobMessage) => {
    if (job?.type !== 'job') return;
    // Acknowledged before compiling, so the pool knows a worker that dies from here on died with the job.
    process.send?.({ type: 'started', id: job.id } satisfies WorkerMessage, () => compile(job));
  });

  function compile(job: JobMessage): void {
    const begun = performance.now();
    // The answer goes out before the cache is evicted; the eviction still ends this job, before the next one.
    const outcome = engine.render(job.body, job.template, { keepUntilClean: true });
    const compileMs = performance.now() - begun;
    if (outcome.ok) {
      send({ type: 'done', id: job.id, pdf: outcome.pdf, pages: outcome.pages, compileMs, warnings: outcome.warnings });
      outcome.pdf.fill(0); // serialized by send(); our copy is wiped
    } else {
      send({ type: 'failed', id: job.id, failure: outcome.failure, compileMs });
    }
    engine.clean();
    job.body.fill(0);
  }
}

void main();
