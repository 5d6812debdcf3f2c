/**
 * `npm run bench [-- --quick] [-- --rounds N] [-- --memory-requests N] [-- --bodies-only] [-- --signing-only] [-- --memory-only] [-- --workloads W1,W1-0.14]`
 *
 * After a warm-up of the service with each workload, for each workload (bench/workloads.ts), in repeated rounds:
 *   floor      the same compile done directly with the engine, in a process of the workload's own (bench/floor.ts)
 *   c=1        the service over HTTP on loopback, one connection: p50 and p99 latency, and the server's CPU,
 *              next to the same CPU and p50 of a bare node:http relay given the workload's body, compile time
 *              and PDF size (relay.ts), in the same blocks; and the server's CPU for a request that waits as
 *              long (workloads.ts: waitingBody)
 *   c=2×cores  the service with 2 × cores connections: requests per second
 * then the resident memory of the server and its workers while sending many
 * W2 requests on each engine, each on a freshly started service; and what a 10 MiB body of each
 * adversarial shape costs the server, and how long /healthz waits meanwhile
 * (bench/bodies.ts; `--bodies-only` runs just that); and what a signature
 * adds to W1 on each engine (bench/signing.ts; `--signing-only`). Prints
 * Markdown tables with the medians over rounds and writes every figure to
 * bench/results.json. `--memory-only` measures the memory alone and prints
 * its tables and targets (bench/results.json is left as it is).
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { describeBodies, HEALTHZ_TARGET_MS, measureBodies } from './bodies.js';
import { describeSigning, measureSigning } from './signing.js';
import { processCpuMs, serviceCpuMs } from './cpu.js';
import { Relay } from './relay.js';
import { FloorProcess } from './floor.js';
import { freedMemoryFill } from '../src/retention/freed-memory-fill.js';
import { type LoadRun, sendLoad, steadyRate } from './load.js';
import { sampleMemory, type MemorySample } from './memory.js';
import { eachRound, ms, pct, ratio, table } from './report.js';
import { metricTotal, startBenchService } from './service.js';
import type { Service } from '../test/support/service.js';
import { clamp, median, percentile, spread } from './stats.js';
import { waitingBody, workloads, type Workload } from './workloads.js';
import { describeWorkers, measureWorkers } from './workers.js';

/**
 * Idle PSS of one worker when every font was a per-process copy handed over
 * as bytes (fontBlobs), before fonts became files the compiler maps on use:
 * ~70 MiB on this class of machine (2 cores, Node 20). The target is 1.5 × that.
 */
const IDLE_PSS_BEFORE_MIB = 70;

/**
 * The server is measured warm, as the floor's compiles are: V8 optimizes a
 * request's functions only after some hundreds of requests (W1 at c=1: 1.49
 * ms of server CPU per request over the first 100, 0.83 to 0.97 after 700).
 * Before the first round each workload is sent this many times, or for
 * about WARM_UP_SECONDS of its compiles, whichever is fewer.
 */
const WARM_UP_REQUESTS = 300;
const WARM_UP_SECONDS = 3;

/** W1 requests per block of the signing figures, signed and not. */
const SIGNING_PER_BLOCK = 40;

const RESULTS = fileURLToPath(new URL('../../bench/results.json', import.meta.url));

interface Settings {
  mode: 'full' | 'quick';
  rounds: number;
  /** Floor and c=1 alternate in this many blocks per round, each about `blockSeconds` of compiling. */
  blocks: number;
  blockSeconds: number;
  /** Compile time, in floor terms, that each throughput run should take per core. */
  throughputSeconds: number;
  minThroughputRequests: number;
  memoryRequests: number;
  /** Requests of each adversarial body shape. */
  bodyRepeats: number;
  /** Blocks of SIGNING_PER_BLOCK requests, signed and not, of W1 on each engine. */
  signingBlocks: number;
}

function settings(argv: string[]): Settings {
  const quick = argv.includes('--quick');
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? Number(argv[i + 1]) : undefined;
  };
  const base: Settings = quick
    ? {
        mode: 'quick',
        rounds: 1,
        blocks: 3,
        blockSeconds: 0.5,
        throughputSeconds: 2,
        minThroughputRequests: 8,
        memoryRequests: 1000,
        bodyRepeats: 1,
        signingBlocks: 2,
      }
    : {
        mode: 'full',
        rounds: 3,
        blocks: 4,
        blockSeconds: 1,
        throughputSeconds: 4,
        minThroughputRequests: 16,
        memoryRequests: 3000,
        bodyRepeats: 3,
        signingBlocks: 6,
      };
  return {
    ...base,
    rounds: value('--rounds') ?? base.rounds,
    memoryRequests: value('--memory-requests') ?? base.memoryRequests,
  };
}

interface RoundFigures {
  floorMs: number;
  /** CPU ms of one floor compile (user + system). */
  floorCpuMs: number;
  /** The same with the workers' malloc settings (freed memory filled). */
  filledFloorCpuMs: number;
  floorRuns: number;
  /** CPU ms the server process spent per request at c=1, from a block's first request to its last answer. */
  serverCpuMs: number;
  /** CPU ms the server spent once quiet after a block (its heap collected, its read buffers scrubbed). */
  quietScrubCpuMs: number;
  /** The same as serverCpuMs for a request that waits as long (waitingBody): a one-line document, a small body. */
  waitingServerCpuMs: number;
  /** The same for a bare node:http relay (bench/relay.ts) given this workload's body, compile time and PDF size. */
  relayCpuMs: number;
  /**
   * The relay's c=1 p50 less the time it holds each request: what a client, a Node server and the pipe to a second
   * process add to any request's time on this machine, next to the service's p50 less its floor.
   */
  relayP50OverHoldMs: number;
  /** CPU ms the whole service (server and workers) spent per document at c=2×cores. */
  serviceCpuMs: number;
  /** Of it, the workers' (live and replaced): the service's less the server process's own. */
  workersCpuMs: number;
  /** Workers replaced during the c=2×cores run (WORKER_MAX_JOBS and any other reason): each start is in workersCpuMs. */
  workersReplaced: number;
  p50: number;
  p99: number;
  maxMs: number;
  latencyRequests: number;
  rps: number;
  throughputRequests: number;
  failures: number;
}

const log = (message: string) => process.stderr.write(`${message}\n`);

/**
 * Requests in a block at c=1: about `blockSeconds` of compiles of `estimateMs` each, 3 to 100. At least 3: W3's
 * block was one or two requests (its floor 0.4 to 0.9 s), and one full collection of the server's heap (10 to 30 ms,
 * V8's own, when it comes) then made most of a round's figure; in more requests it weighs less.
 */
const requestsPerBlock = (s: Settings, estimateMs: number) => Math.round(clamp((s.blockSeconds * 1000) / estimateMs, 3, 100));
const loadavg = () => os.loadavg().map((x) => Number(x.toFixed(2)));

/** The floor processes of one workload: the bare binding, and the same with the workers' malloc settings. */
interface Floors {
  bare: FloorProcess;
  filled: FloorProcess;
}

async function measureRound(
  service: Service,
  floors: Map<string, Floors>,
  list: Workload[],
  floorEstimate: Map<string, number>,
  waitingIterations: Map<string, number>,
  relayFor: (workload: Workload, holdMs: number) => { url: string; pid: number },
  s: Settings,
  cores: number,
): Promise<Map<string, RoundFigures>> {
  const figures = new Map<string, RoundFigures>();
  const connections = 2 * cores;
  const server = { url: service.url, pid: service.process.pid! };
  for (const workload of list) {
    const floor = floors.get(workload.id)!;
    const estimate = floorEstimate.get(workload.id)!;
    const perBlock = requestsPerBlock(s, estimate);
    // Every worker compiles this workload once before anything is timed; so do the floor processes.
    await sendLoad({ url: service.url, body: workload.body, connections: cores, requests: cores });
    await floor.bare.measure(workload.id, 1);
    await floor.filled.measure(workload.id, 1);
    const floorSamples: number[] = [];
    const floorCpu: number[] = [];
    const filledFloorCpu: number[] = [];
    const latencies: number[] = [];
    let failures = 0;
    let serverCpu = 0;
    let relayCpu = 0;
    const relayLatencies: number[] = [];
    /** Server CPU from each block's last answer to autocannon's end: the scrub once the server is quiet. */
    const quietScrubCpu: number[] = [];
    for (let b = 0; b < s.blocks; b++) {
      // The bare and the filled floor take turns going first, so that neither always follows the service's block.
      const [first, second] = b % 2 === 0 ? [floor.bare, floor.filled] : [floor.filled, floor.bare];
      const answers = new Map([
        [first, await first.measure(workload.id, perBlock)],
        [second, await second.measure(workload.id, perBlock)],
      ]);
      const answer = answers.get(floor.bare)!;
      floorSamples.push(...answer.samples);
      floorCpu.push(...answer.cpuSamples);
      filledFloorCpu.push(...answers.get(floor.filled)!.cpuSamples);
      const { run, cpuMs, cpuAtLastAnswer } = await serverCpuOfBlock(server, workload.body, perBlock);
      serverCpu += cpuMs;
      quietScrubCpu.push(processCpuMs(server.pid) - cpuAtLastAnswer);
      latencies.push(...run.latencies);
      failures += run.failures;
      // The relay's block follows the server's, so that the two see the same load on the machine.
      const relayed = await serverCpuOfBlock(relayFor(workload, estimate), workload.body, perBlock);
      // The relay is the bench's own: a failure is a fault of the bench, not a figure.
      if (relayed.run.failures > 0) throw new Error(`the bench's relay failed ${relayed.run.failures} of ${perBlock} requests`);
      relayCpu += relayed.cpuMs;
      relayLatencies.push(...relayed.run.latencies);
    }
    const replacedBefore = await metricTotal(service, 'typst_pdf_worker_restarts_total');
    const serviceCpuBefore = serviceCpuMs(server.pid);
    const serverCpuBefore = processCpuMs(server.pid);
    const throughput = await sendLoad({
      url: service.url,
      body: workload.body,
      connections,
      requests: Math.round(clamp((s.throughputSeconds * 1000 * cores) / estimate, s.minThroughputRequests, 3000)),
    });
    const serviceCpu = serviceCpuMs(server.pid) - serviceCpuBefore;
    const workersCpu = serviceCpu - (processCpuMs(server.pid) - serverCpuBefore);
    const workersReplaced = (await metricTotal(service, 'typst_pdf_worker_restarts_total')) - replacedBefore;
    const round: RoundFigures = {
      floorMs: median(floorSamples),
      floorCpuMs: median(floorCpu),
      filledFloorCpuMs: median(filledFloorCpu),
      floorRuns: floorSamples.length,
      serverCpuMs: serverCpu / (s.blocks * perBlock),
      quietScrubCpuMs: median(quietScrubCpu),
      waitingServerCpuMs: 0,
      relayCpuMs: relayCpu / (s.blocks * perBlock),
      relayP50OverHoldMs: percentile(relayLatencies, 50) - estimate,
      serviceCpuMs: serviceCpu / throughput.completedAt.length,
      workersCpuMs: workersCpu / throughput.completedAt.length,
      workersReplaced,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      maxMs: Math.max(...latencies),
      latencyRequests: latencies.length,
      rps: steadyRate(throughput),
      throughputRequests: throughput.completedAt.length,
      failures: failures + throughput.failures,
    };
    figures.set(workload.id, round);
    log(
      `  ${workload.id}: floor ${ms(round.floorMs)} ms, c=1 p50 ${ms(round.p50)} p99 ${ms(round.p99)} ms ` +
        `(${round.latencyRequests} each, in ${s.blocks} alternating blocks), ` +
        `c=${connections} ${round.rps.toFixed(1)} req/s (${round.throughputRequests} req); ` +
        `CPU: floor ${ms(round.floorCpuMs)} ms, server ${round.serverCpuMs.toFixed(2)} ms/req ` +
        `(a bare relay ${round.relayCpuMs.toFixed(2)}, its p50 ${ms(round.relayP50OverHoldMs)} ms over its hold) ` +
        `(+${ms(round.quietScrubCpuMs)} ms once quiet), ` +
        `workers ${ms(round.workersCpuMs)} ms/doc (${round.workersReplaced} replaced), service ${ms(round.serviceCpuMs)} ms/doc` +
        (round.failures ? `, ${round.failures} FAILED` : ''),
    );
  }
  // A request that waits as long as each workload compiles, in a block as long: what the server's CPU is at that
  // compile time, whatever the body and PDF. After every workload's figures, so that none of them follows it.
  for (const workload of list) {
    const estimate = floorEstimate.get(workload.id)!;
    const perBlock = requestsPerBlock(s, estimate);
    const waiting = waitingBody(workload.engine, await iterationsFor(service, workload, estimate, waitingIterations));
    const round = figures.get(workload.id)!;
    round.waitingServerCpuMs = (await serverCpuOfBlock(server, waiting, perBlock)).cpuMs / perBlock;
    log(`  ${workload.id}: server ${round.waitingServerCpuMs.toFixed(2)} ms/req for a request that waits as long`);
  }
  return figures;
}

/**
 * Loop iterations that make waitingBody(workload's engine) compile for about
 * `ms`, found once per workload: the time of 0 and of a trial count, then
 * scaled (the loop is linear).
 */
async function iterationsFor(service: Service, workload: Workload, ms: number, known: Map<string, number>): Promise<number> {
  const found = known.get(workload.id);
  if (found !== undefined) return found;
  const timeOf = async (iterations: number) => {
    const run = await sendLoad({ url: service.url, body: waitingBody(workload.engine, iterations), connections: 1, requests: 3 });
    return median(run.latencies);
  };
  const trial = 200_000;
  const base = await timeOf(0);
  const perIteration = Math.max((await timeOf(trial)) - base, 1) / trial;
  const iterations = Math.max(0, (ms - base) / perIteration);
  known.set(workload.id, iterations);
  return iterations;
}

/**
 * A block of `requests` of `body` at c=1, and the server's CPU from its first request to its last answer. Read at the
 * last answer: autocannon reports the end some 0.7 s later, by which time the server has gone quiet and scrubbed
 * (a collection and the read buffers), which the caller counts on its own from `cpuAtLastAnswer`.
 */
async function serverCpuOfBlock(
  { url, pid }: { url: string; pid: number },
  body: Buffer,
  requests: number,
): Promise<{ run: LoadRun; cpuMs: number; cpuAtLastAnswer: number }> {
  const before = processCpuMs(pid);
  let cpuAtLastAnswer = before;
  const run = await sendLoad({
    url,
    body,
    connections: 1,
    requests,
    onResponse: (count) => {
      if (count === requests) cpuAtLastAnswer = processCpuMs(pid);
    },
  });
  return { run, cpuMs: cpuAtLastAnswer - before, cpuAtLastAnswer };
}

interface MemoryResult {
  workload: string;
  requests: number;
  connections: number;
  marks: { requests: number; totalMiB: number; serverMiB: number; workersMiB: number }[];
  samples: MemorySample[];
  failures: number;
  rps: number;
}

/** RSS of server + workers while sending `requests` requests of `workload` to a freshly started service. */
async function measureMemory(workload: Workload, requests: number, cores: number): Promise<MemoryResult> {
  const service = await startBenchService(cores);
  try {
    const pid = service.process.pid!;
    const samples: MemorySample[] = [sampleMemory(pid, 0)];
    let count = 0;
    const timer = setInterval(() => samples.push(sampleMemory(pid, count)), 200);
    const connections = 2 * cores;
    const run = await sendLoad({
      url: service.url,
      body: workload.body,
      connections,
      requests,
      onResponse: (n) => {
        count = n;
        if (n % Math.max(1, Math.round(requests / 10)) === 0)
          log(`  memory: ${n} requests, ${sampleMemory(pid, n).totalMiB.toFixed(0)} MiB`);
      },
    });
    clearInterval(timer);
    samples.push(sampleMemory(pid, count));
    // The figure at a mark: the median of the samples taken over the last tenth of the requests before it,
    // since a worker's memory rises and falls with each compile.
    const marks = [0.1, 0.5, 1].map((f) => {
      const mark = Math.round(requests * f);
      const window = samples.filter((x) => x.requests > mark * 0.9 && x.requests <= mark);
      const pick = (k: 'totalMiB' | 'serverMiB' | 'workersMiB') => median(window.map((x) => x[k]));
      return { requests: mark, totalMiB: pick('totalMiB'), serverMiB: pick('serverMiB'), workersMiB: pick('workersMiB') };
    });
    return { workload: workload.id, requests, connections, marks, samples, failures: run.failures, rps: steadyRate(run) };
  } finally {
    await service.stop();
  }
}

/** One target of the issue's, as measured. */
interface Target {
  target: string;
  value: string;
  met: boolean;
}

const describeTargets = (targets: Target[]) =>
  table(
    ['target', 'measured', 'met'],
    targets.map((t) => [t.target, t.value, t.met ? 'yes' : 'NO']),
  );

function describeMemory(memory: MemoryResult): string {
  return [
    `Memory (RSS of server + workers, ${memory.workload} at c=${memory.connections}, ${memory.rps.toFixed(1)} req/s, WORKER_MAX_JOBS as default):`,
    '',
    table(
      ['requests', 'total MiB', 'server MiB', 'workers MiB'],
      memory.marks.map((m) => [m.requests, m.totalMiB.toFixed(0), m.serverMiB.toFixed(0), m.workersMiB.toFixed(0)]),
    ),
  ].join('\n');
}

/** The memory target: flat, the last mark within 10 % of the first. */
function memoryTarget(memory: MemoryResult): Target {
  const [first, , last] = memory.marks;
  return {
    target: `${memory.workload}: memory at ${last!.requests} requests ≤ 1.10 × at ${first!.requests}`,
    value: `${ratio(last!.totalMiB / first!.totalMiB)} ×`,
    met: last!.totalMiB <= 1.1 * first!.totalMiB,
  };
}

/** Says how many requests failed, and makes the bench's exit status say so too. */
function reportFailures(failures: number): void {
  if (failures === 0) return;
  process.stderr.write(`${failures} requests failed\n`);
  process.exitCode = 1;
}

/** The memory figures of W2 and W2-0.14, each on a freshly started service. */
async function measureMemories(requests: number, cores: number): Promise<MemoryResult[]> {
  const memories: MemoryResult[] = [];
  for (const w of workloads().filter((x) => x.id === 'W2' || x.id === 'W2-0.14')) {
    log(`memory: ${requests} ${w.id} requests on a fresh service (load average ${loadavg().join(' ')})`);
    memories.push(await measureMemory(w, requests, cores));
  }
  return memories;
}

async function main(): Promise<void> {
  const s = settings(process.argv.slice(2));
  const cores = os.availableParallelism();
  if (process.argv.includes('--memory-only')) {
    const memories = await measureMemories(s.memoryRequests, cores);
    const targets = memories.map(memoryTarget);
    process.stdout.write(`${memories.map(describeMemory).join('\n\n')}\n\n`);
    process.stdout.write(`${describeTargets(targets)}\n`);
    reportFailures(memories.reduce((sum, m) => sum + m.failures, 0));
    return;
  }
  if (process.argv.includes('--bodies-only')) {
    log(`adversarial bodies: ${s.bodyRepeats} request(s) of each shape (load average ${loadavg().join(' ')})`);
    process.stdout.write(`${describeBodies(await measureBodies(cores, s.bodyRepeats, log), s.bodyRepeats)}\n`);
    return;
  }
  if (process.argv.includes('--signing-only')) {
    log(`signing: W1 on each engine, signed and not (load average ${loadavg().join(' ')})`);
    process.stdout.write(`${describeSigning(await measureSigning(s.signingBlocks, SIGNING_PER_BLOCK, log))}\n`);
    return;
  }
  // `--workloads W1,W2-0.14`: only those (the memory and worker figures are measured anyway).
  const only = process.argv.includes('--workloads') ? process.argv[process.argv.indexOf('--workloads') + 1]!.split(',') : undefined;
  const list = workloads().filter((w) => !only || only.includes(w.id));
  const machine = {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores,
    memoryGiB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    loadavgAtStart: loadavg(),
  };
  log(`bench (${s.mode}): ${cores} cores, ${s.rounds} rounds, load average ${machine.loadavgAtStart.join(' ')}`);

  // A floor process per workload: a process that has compiled 9 MB of data (W4) compiles small
  // documents after it about a third slower, which would make the floor of the next workload
  // depend on the order of the list.
  // The floor is the engine's own speed: the bare binding, with none of the workers' malloc settings.
  // What those settings (freed memory filled) cost the engine is a second floor process, measured in the same blocks.
  const floors = new Map<string, Floors>();
  for (const w of list) floors.set(w.id, { bare: await FloorProcess.start({ bare: true }), filled: await FloorProcess.start() });
  const floorEstimate = new Map<string, number>();
  const waitingIterations = new Map<string, number>();
  const pages = new Map<string, { pages: number; pdfBytes: number }>();
  // It ends with the bench, stopped or not (it leaves when its channel closes).
  const relay = await Relay.start();
  const relayFor = (w: Workload, holdMs: number) => ({ url: relay.url(holdMs, pages.get(w.id)!.pdfBytes), pid: relay.pid });
  const service = await startBenchService(cores);
  const rounds: Map<string, RoundFigures>[] = [];
  const loadDuringRounds: number[][] = [];
  try {
    // A short first pass sizes every later measurement to about the same time per workload. A floor process's first
    // compile of a workload is cold (the e-invoice: 19.7 ms, then 10.0, 9.7, 9.3), so it does not count: with it, the
    // estimate was half as long again, and the blocks, the throughput runs and the waits of the relay and of the
    // request that waits as long with it.
    for (const w of list) {
      const answer = await floors.get(w.id)!.bare.measure(w.id, 4);
      floorEstimate.set(w.id, median(answer.samples.slice(1)));
      pages.set(w.id, { pages: answer.pages, pdfBytes: answer.pdfBytes });
    }
    log(`warm-up: each workload up to ${WARM_UP_REQUESTS} times at c=1 (${WARM_UP_SECONDS} s of its compiles at most)`);
    for (const w of list) {
      const requests = Math.round(clamp((WARM_UP_SECONDS * 1000) / floorEstimate.get(w.id)!, 2, WARM_UP_REQUESTS));
      await sendLoad({ url: service.url, body: w.body, connections: 1, requests });
      await sendLoad({ url: relayFor(w, 0).url, body: w.body, connections: 1, requests });
    }
    for (let r = 0; r < s.rounds; r++) {
      log(`round ${r + 1}/${s.rounds} (load average ${loadavg().join(' ')})`);
      rounds.push(await measureRound(service, floors, list, floorEstimate, waitingIterations, relayFor, s, cores));
      loadDuringRounds.push(loadavg());
    }
  } finally {
    await relay.stop();
    await service.stop();
    await Promise.all([...floors.values()].flatMap((floor) => [floor.bare.stop(), floor.filled.stop()]));
  }

  // Memory on each engine: the 200-row report, on a fresh service each.
  const memories = await measureMemories(s.memoryRequests, cores);
  log(`workers: start time and idle memory`);
  const workerFigures = await measureWorkers(cores);
  log(`adversarial bodies: ${s.bodyRepeats} request(s) of each shape at 10 MiB (load average ${loadavg().join(' ')})`);
  const bodies = await measureBodies(cores, s.bodyRepeats, log);
  const worstHealthz = Math.max(...bodies.map((b) => b.healthzMaxMs));
  log(`signing: W1 on each engine, signed and not (load average ${loadavg().join(' ')})`);
  const signing = await measureSigning(s.signingBlocks, SIGNING_PER_BLOCK, log);

  const connections = 2 * cores;
  const results = list.map((w) => {
    const per = rounds.map((round) => round.get(w.id)!);
    const pick = (k: keyof RoundFigures) => median(per.map((x) => x[k]));
    // A figure against the floor is taken in each round, where the two were measured side by side; the median
    // of the rounds' values is what counts (a ratio of two medians could pair a fast round's floor with a slow one's service).
    const byRound = (of: (round: RoundFigures) => number) => per.map(of);
    const floorMs = pick('floorMs');
    const p50 = pick('p50');
    const rps = pick('rps');
    const idealRpsOf = (roundFloorMs: number) => (cores * 1000) / roundFloorMs;
    const floorCpuMs = pick('floorCpuMs');
    const serviceCpuMs = pick('serviceCpuMs');
    const workersCpuMs = pick('workersCpuMs');
    // The server's allowance: 1 ms a request and 2 ms a megabyte of body.
    const serverAllowanceMs = 1 + (2 * w.body.length) / 1e6;
    const p50BoundOf = (roundFloorMs: number) => Math.max(roundFloorMs + 1.5, 1.1 * roundFloorMs);
    const rpsBoundOf = (roundFloorCpuMs: number) => (0.8 * cores * 1000) / (roundFloorCpuMs + serverAllowanceMs);
    const workersByRound = byRound((x) => x.workersCpuMs / x.floorCpuMs);
    const p50ByRound = byRound((x) => x.p50 / p50BoundOf(x.floorMs));
    const rpsByRound = byRound((x) => x.rps / rpsBoundOf(x.floorCpuMs));
    return {
      id: w.id,
      description: w.description,
      bodyBytes: w.body.length,
      ...pages.get(w.id)!,
      floorMs,
      p50Ms: p50,
      p99Ms: pick('p99'),
      p50OverFloor: median(byRound((x) => x.p50 / x.floorMs)),
      p50MinusFloorMs: median(byRound((x) => x.p50 - x.floorMs)),
      relayP50OverHoldMs: pick('relayP50OverHoldMs'),
      connections,
      rps,
      idealRps: idealRpsOf(floorMs),
      rpsOverIdeal: median(byRound((x) => x.rps / idealRpsOf(x.floorMs))),
      floorCpuMs,
      filledFloorCpuMs: pick('filledFloorCpuMs'),
      serverCpuMs: pick('serverCpuMs'),
      quietScrubCpuMs: pick('quietScrubCpuMs'),
      waitingServerCpuMs: pick('waitingServerCpuMs'),
      relayCpuMs: pick('relayCpuMs'),
      serviceCpuMs,
      serviceCpuOverFloor: median(byRound((x) => x.serviceCpuMs / x.floorCpuMs)),
      workersCpuMs,
      workersCpuOverFloor: median(workersByRound),
      workersByRound,
      workersReplaced: per.map((x) => x.workersReplaced),
      serverAllowanceMs,
      p50BoundMs: p50BoundOf(floorMs),
      p50OverBound: median(p50ByRound),
      p50ByRound,
      rpsBound: rpsBoundOf(floorCpuMs),
      rpsOverBound: median(rpsByRound),
      rpsByRound,
      failures: per.reduce((sum, x) => sum + x.failures, 0),
      spread: { floor: spread(per.map((x) => x.floorMs)), p50: spread(per.map((x) => x.p50)), rps: spread(per.map((x) => x.rps)) },
      rounds: per,
    };
  });
  const byId = (id: string) => results.find((x) => x.id === id)!;
  const measured = (...ids: string[]) => ids.every((id) => results.some((x) => x.id === id));
  // Targets of workloads left out with --workloads are left out too.
  const targets: Target[] = [
    ...results.flatMap((x) => [
      {
        target: `${x.id} workers' CPU per document at c=${connections} ≤ 1.15 × floor CPU (at the median floor, ${ms(1.15 * x.floorCpuMs)} ms)`,
        value: `${ratio(x.workersCpuOverFloor)} × (${eachRound(x.workersByRound)})`,
        met: x.workersCpuOverFloor <= 1.15,
      },
      {
        target: `${x.id} server CPU per request ≤ 1 ms + 2 ms per MB of body (${x.serverAllowanceMs.toFixed(2)} ms)`,
        value: `${x.serverCpuMs.toFixed(2)} ms`,
        met: x.serverCpuMs <= x.serverAllowanceMs,
      },
      {
        target: `${x.id} p50 at c=1 ≤ floor + 1.5 ms or 1.10 × floor, the larger (at the median floor, ${ms(x.p50BoundMs)} ms)`,
        value: `${ms(x.p50Ms)} ms; ${ratio(x.p50OverBound)} × the bound (${eachRound(x.p50ByRound)})`,
        met: x.p50OverBound <= 1,
      },
      {
        target: `${x.id} throughput at c=${connections} ≥ 0.8 × ${cores} cores / (floor CPU + server allowance) (at the median floor, ${x.rpsBound.toFixed(1)} req/s)`,
        value: `${x.rps.toFixed(1)} req/s; ${ratio(x.rpsOverBound)} × the bound (${eachRound(x.rpsByRound)})`,
        met: x.rpsOverBound >= 1,
      },
    ]),
    ...memories.map(memoryTarget),
    {
      target: `idle worker PSS ≤ 1.5 × ${IDLE_PSS_BEFORE_MIB} MiB (fonts as per-process bytes)`,
      value: `${median(workerFigures.idlePssMiB).toFixed(1)} MiB`,
      met: median(workerFigures.idlePssMiB) <= 1.5 * IDLE_PSS_BEFORE_MIB,
    },
    { target: 'worker start ≤ 400 ms', value: `${median(workerFigures.startMs).toFixed(0)} ms`, met: median(workerFigures.startMs) <= 400 },
    ...(measured('E1', 'E1-fx')
      ? [
          {
            target: 'E1-fx p50 at c=1 ≤ E1 p50 + 5 ms (XSD check and XMP update)',
            value: `${ms(byId('E1-fx').p50Ms - byId('E1').p50Ms)} ms more`,
            met: byId('E1-fx').p50Ms - byId('E1').p50Ms <= 5,
          },
        ]
      : []),
    ...(measured('W4')
      ? [{ target: 'W4 answered in under 1 s (p99 at c=1)', value: `${ms(byId('W4').p99Ms)} ms`, met: byId('W4').p99Ms < 1000 }]
      : []),
    {
      target: `/healthz within ${HEALTHZ_TARGET_MS} ms while a 10 MiB body of any adversarial shape is checked`,
      value: `${ms(worstHealthz)} ms`,
      met: worstHealthz <= HEALTHZ_TARGET_MS,
    },
  ];
  const output = {
    date: new Date().toISOString(),
    mode: s.mode,
    machine: { ...machine, loadavgDuringRounds: loadDuringRounds, loadavgAtEnd: loadavg() },
    settings: s,
    workloads: results,
    memory: memories.map((memory) => ({ ...memory, samples: memory.samples.filter((_, i) => i % 5 === 0) })),
    workers: workerFigures,
    bodies,
    signing,
    targets,
  };
  writeFileSync(RESULTS, `${JSON.stringify(output, null, 2)}\n`);

  const text = [
    `Machine: ${machine.cpu}, ${cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node.js ${machine.node}`,
    `Mode: ${s.mode}; figures are medians over ${s.rounds} rounds, after a warm-up of each workload (up to ${WARM_UP_REQUESTS} requests); load average at start ${machine.loadavgAtStart.join(' ')}, at end ${output.machine.loadavgAtEnd.join(' ')}`,
    "A figure against the floor (a ratio, p50 − floor, a target's bound) is taken in each round, where the service's blocks alternate with the floor's,",
    "and the median of the rounds' values is shown and judged: the machine's speed differs from round to round (the spread column), and a ratio",
    'of two medians could pair the floor of a fast round with the service of a slow one.',
    '"A bare relay\'s p50 − its hold": the c=1 p50 of the bare relay (below) less the time it holds each request (the workload\'s compile',
    "time): what a client, a Node server and a pipe to a second process add to any request's time on this machine, against p50 − floor.",
    '',
    table(
      [
        '',
        'pages',
        'body',
        'floor ms',
        'c=1 p50 ms',
        'c=1 p99 ms',
        'p50 / floor',
        'p50 − floor ms',
        "a bare relay's p50 − its hold ms",
        `c=${connections} req/s`,
        'cores × floor rate',
        'ratio',
        'spread (floor, p50, req/s)',
      ],
      results.map((x) => [
        `${x.id} ${x.description}`,
        x.pages,
        x.bodyBytes >= 1e6 ? `${(x.bodyBytes / 2 ** 20).toFixed(1)} MiB` : `${(x.bodyBytes / 1024).toFixed(0)} KiB`,
        ms(x.floorMs),
        ms(x.p50Ms),
        ms(x.p99Ms),
        ratio(x.p50OverFloor),
        ms(x.p50MinusFloorMs),
        ms(x.relayP50OverHoldMs),
        x.rps.toFixed(1),
        x.idealRps.toFixed(1),
        ratio(x.rpsOverIdeal),
        `${pct(x.spread.floor)}, ${pct(x.spread.p50)}, ${pct(x.spread.rps)}`,
      ]),
    ),
    '',
    'CPU time (user + system, from /proc), medians:',
    '',
    table(
      [
        '',
        'floor CPU ms/doc',
        'with the fill (its cost)',
        'server CPU ms/req (c=1)',
        'the same, a request that waits as long',
        'a bare relay, same body, wait and PDF size',
        'server CPU ms once quiet',
        `service CPU ms/doc (c=${connections}, server + workers)`,
        'service / floor',
        `workers' CPU ms/doc (c=${connections})`,
        'workers / floor',
        'workers replaced, by round',
      ],
      results.map((x) => [
        `${x.id}`,
        ms(x.floorCpuMs),
        `${ms(x.filledFloorCpuMs)} (${pct(x.filledFloorCpuMs / x.floorCpuMs - 1)})`,
        x.serverCpuMs.toFixed(2),
        x.waitingServerCpuMs.toFixed(2),
        x.relayCpuMs.toFixed(2),
        ms(x.quietScrubCpuMs),
        ms(x.serviceCpuMs),
        ratio(x.serviceCpuOverFloor),
        ms(x.workersCpuMs),
        ratio(x.workersCpuOverFloor),
        x.workersReplaced.join(', '),
      ]),
    ),
    '',
    "Server CPU at c=1 (its threads' time as the scheduler counts it, in nanoseconds) is read from a block's first request",
    'to its last answer; "once quiet" is what it spends after that,',
    'when no request has come for 50 to 100 ms: a collection of its heap and the scrub of its read buffers (once per quiet spell, not per request).',
    '"A request that waits as long": the same, for a one-line document with a small body whose template counts in a loop for about as long as',
    "the workload's compile (bench/workloads.ts: waitingBody). The server does the same for it whatever the workload; what it costs grows with",
    'the time the server sleeps while a worker computes, as the machine wakes it colder (docs/performance.md).',
    '"A bare relay": the same CPU of a bare node:http server that relays the workload\'s body to a child process over a pipe and answers with',
    "what the child sends back: as many bytes as the workload's PDF, after spinning for as long as its compile (bench/relay.ts), each of its",
    "blocks right after one of the server's. It is the least any Node server pays for that request on this machine: no checks, no retention,",
    'no framework.',
    `The workers' CPU includes the start of each worker replaced during the c=${connections} run (after WORKER_MAX_JOBS jobs, by default).`,
    '',
    'The floor runs with no malloc settings. "With the fill": the same compiles in a process with freed memory filled',
    `(here by ${freedMemoryFill().description.replace(/^freed memory is filled by /, '')}), a process of its own per workload, measured in the same blocks as the floor (the two take turns going first).`,
    "The workers' malloc also asks for transparent huge pages (src/render/worker-allocator.ts); neither floor does.",
    '',
    ...memories.flatMap((memory) => [describeMemory(memory), '']),
    '',
    describeWorkers(workerFigures),
    '',
    describeBodies(bodies, s.bodyRepeats),
    '',
    describeSigning(signing),
    '',
    describeTargets(targets),
    '',
    `Written to ${RESULTS}`,
  ].join('\n');
  process.stdout.write(`${text}\n`);
  reportFailures(results.reduce((sum, x) => sum + x.failures, 0) + memories.reduce((sum, m) => sum + m.failures, 0));
}

await main();
