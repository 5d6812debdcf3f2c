/**
 * What a 10 MiB body of each adversarial shape (test/support/body-shapes.ts)
 * costs the server, which checks every body before any compile (large ones
 * on a thread of their own): the server's CPU for the request (utime +
 * stime from /proc/PID/stat, before and after; and of the event-loop thread
 * alone, from /proc/PID/task/PID/stat), and how long the event loop stood
 * still meanwhile, seen from outside (the slowest /healthz answer, polled
 * every 5 ms) and from inside (the share of the time its event loop was
 * busy, from the service's own metrics, scraped before and after). Target:
 * /healthz within 100 ms.
 */
import { BODY_SHAPES } from '../test/support/body-shapes.js';
import { mainThreadCpuMs, processCpuMs } from './cpu.js';
import { ms, table } from './report.js';
import { metricTotal, startBenchService } from './service.js';
import { TEST_KEY, type Service } from '../test/support/service.js';
import { median } from './stats.js';

const BODY_BYTES = 10 * 1024 * 1024;
export const HEALTHZ_TARGET_MS = 100;

export interface BodyFigures {
  shape: string;
  bytes: number;
  status: number;
  /** Server CPU of the request, all threads (median of the repeats). */
  serverCpuMs: number;
  /** CPU of the server's event-loop thread alone: time it could not spend answering others. */
  eventLoopCpuMs: number;
  /** Time to the answer, compile included. */
  answerMs: number;
  /** Slowest /healthz answer while the request was in flight. */
  healthzMaxMs: number;
  /** Share of the time the server's event loop was busy meanwhile, in per cent. */
  eventLoopBusyPercent: number;
}

/** Seconds the server's event loop has been busy so far, from the service's own metrics. */
const eventLoopBusySeconds = (service: Service) => metricTotal(service, 'typst_pdf_nodejs_eventloop_busy_seconds_total');

async function once(service: Service, body: Buffer): Promise<Omit<BodyFigures, 'shape' | 'bytes'>> {
  const pid = service.process.pid!;
  const busyBefore = await eventLoopBusySeconds(service);
  const cpuBefore = processCpuMs(pid);
  const mainBefore = mainThreadCpuMs(pid);
  const started = performance.now();
  let done = false;
  const answer = fetch(`${service.url}/v1/pdf/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` },
    body: new Uint8Array(body),
  }).then(async (res) => {
    await res.arrayBuffer();
    done = true;
    return { status: res.status, answerMs: performance.now() - started };
  });
  let healthzMaxMs = 0;
  while (!done) {
    const asked = performance.now();
    await (await fetch(`${service.url}/healthz`)).arrayBuffer();
    healthzMaxMs = Math.max(healthzMaxMs, performance.now() - asked);
    await new Promise((r) => setTimeout(r, 5));
  }
  const { status, answerMs } = await answer;
  const elapsedMs = performance.now() - started;
  const busyMs = ((await eventLoopBusySeconds(service)) - busyBefore) * 1000;
  const eventLoopBusyPercent = (100 * busyMs) / elapsedMs;
  const serverCpuMs = processCpuMs(pid) - cpuBefore;
  const eventLoopCpuMs = mainThreadCpuMs(pid) - mainBefore;
  return { status, answerMs, serverCpuMs, eventLoopCpuMs, healthzMaxMs, eventLoopBusyPercent };
}

export async function measureBodies(cores: number, repeats: number, log: (message: string) => void): Promise<BodyFigures[]> {
  const service = await startBenchService(cores);
  const figures: BodyFigures[] = [];
  try {
    for (const shape of BODY_SHAPES) {
      const body = shape.make(BODY_BYTES);
      const runs: Awaited<ReturnType<typeof once>>[] = [];
      for (let i = 0; i < repeats; i++) runs.push(await once(service, body));
      const pick = (k: 'serverCpuMs' | 'eventLoopCpuMs' | 'answerMs') => median(runs.map((r) => r[k]));
      const result: BodyFigures = {
        shape: shape.name,
        bytes: body.length,
        status: runs[0]!.status,
        serverCpuMs: pick('serverCpuMs'),
        eventLoopCpuMs: pick('eventLoopCpuMs'),
        answerMs: pick('answerMs'),
        healthzMaxMs: Math.max(...runs.map((r) => r.healthzMaxMs)),
        eventLoopBusyPercent: Math.max(...runs.map((r) => r.eventLoopBusyPercent)),
      };
      figures.push(result);
      log(
        `  ${shape.name}: ${result.status}, server CPU ${ms(result.serverCpuMs)} ms (event-loop thread ${ms(result.eventLoopCpuMs)}), answered in ${ms(result.answerMs)} ms, ` +
          `/healthz up to ${ms(result.healthzMaxMs)} ms, event loop busy ${result.eventLoopBusyPercent.toFixed(0)} %`,
      );
    }
  } finally {
    await service.stop();
  }
  return figures;
}

export function describeBodies(figures: BodyFigures[], repeats: number): string {
  return [
    `Adversarial 10 MiB bodies (server CPU: median of ${repeats}; /healthz and event-loop share: the worst of ${repeats}; target: /healthz within ${HEALTHZ_TARGET_MS} ms):`,
    '',
    table(
      ['body', 'status', 'server CPU ms', 'of it, event-loop thread', 'answered in ms', '/healthz max ms', 'event loop busy %'],
      figures.map((f) => [
        f.shape,
        f.status,
        ms(f.serverCpuMs),
        ms(f.eventLoopCpuMs),
        ms(f.answerMs),
        ms(f.healthzMaxMs),
        f.eventLoopBusyPercent.toFixed(0),
      ]),
    ),
  ].join('\n');
}
