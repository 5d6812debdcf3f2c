/**
 * Workers at rest: how long one takes to start (spawn to compiler ready,
 * from the service's "worker started" log lines) and how much memory each
 * idle one costs, as PSS from /proc/PID/smaps_rollup: memory shared with
 * other processes (mapped files, the binding) is divided among them.
 */
import { readFileSync } from 'node:fs';
import { startService, TEST_KEY } from '../test/support/service.js';
import { median } from './stats.js';

export interface WorkerFigures {
  startMs: number[];
  idlePssMiB: number[];
  /** PSS of a worker that has just printed a page in every bundled script. */
  afterScriptsPssMiB: number;
}

function pssMiB(pid: number): number {
  const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

const SCRIPTS = 'Latin Ελληνικά Русский 株式会社 简体中文 繁體中文 한국어 العربية עברית हिन्दी ภาษาไทย';

export async function measureWorkers(workers: number, restarts = 4): Promise<WorkerFigures> {
  const service = await startService({ WORKERS: String(workers), SPARE_WORKERS: '1', RATE_LIMIT_PER_MINUTE: '1000000' });
  const started = () => [...service.output().matchAll(/"ms":(\d+),"msg":"worker started"/g)].map((m) => Number(m[1]));
  const settle = async (count: number) => {
    for (let i = 0; i < 200 && (started().length < count || service.workerPids().length < workers + 1); i++)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 500));
  };
  try {
    await settle(workers + 1);
    const idlePssMiB = service.workerPids().map(pssMiB);
    // Each replaced worker is one more start to time.
    for (let i = 0; i < restarts; i++) {
      const before = started().length;
      process.kill(service.workerPids()[0]!, 'SIGKILL');
      await settle(before + 1);
    }
    const res = await fetch(`${service.url}/v1/pdf/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` },
      body: JSON.stringify({ data: {}, template: `#set text(weight: "bold")\n${SCRIPTS}\n\n#set text(weight: "regular")\n${SCRIPTS}` }),
    });
    await res.arrayBuffer();
    const afterScriptsPssMiB = Math.max(...service.workerPids().map(pssMiB));
    return { startMs: started(), idlePssMiB, afterScriptsPssMiB };
  } finally {
    await service.stop();
  }
}

export function describeWorkers(figures: WorkerFigures): string {
  return (
    `Workers: start ${median(figures.startMs).toFixed(0)} ms median of ${figures.startMs.length} (spawn to compiler ready); ` +
    `idle PSS ${median(figures.idlePssMiB).toFixed(1)} MiB median per worker; ` +
    `${figures.afterScriptsPssMiB.toFixed(1)} MiB after a page in every bundled script`
  );
}
