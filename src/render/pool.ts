/**
 * The render pool: N worker processes, one job each at a time, a bounded
 * queue in front (job-queue.ts), and supervision behind. A job that overruns
 * the compile limit gets its worker killed; a worker that dies, overruns,
 * goes silent, has served its quota or asks to be (eviction-cost.ts) is
 * replaced, and the jobs beside it are not disturbed. Spare workers,
 * started and idle, take the place of a worker that ends, so a crash costs
 * no cold start.
 *
 * Each worker has a pipe of its own for frames of raw bytes (frames.ts):
 * the request body goes in as it was received, the PDF or the error answer
 * comes out, and neither becomes a JavaScript string here. A worker's
 * options (the engine's settings and the font catalogue) reach it once, on
 * the IPC channel, as it starts (worker-messages.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Job } from '../bytes/layout.js';
import type { Config } from '../config.js';
import type { EngineOptions } from './engine.js';
import { CompileTimeoutError, MemoryLimitError, UnavailableError, WorkerCrashError, WorkerKilledError } from './errors.js';
import { OomKills } from './oom-kills.js';
import type { FontFamilyInfo } from './fonts/types.js';
import { type Frame, FrameReader, FrameType, readResult, restOf, writeJob } from './frames.js';
import { JobQueue, release, type Waiting } from './job-queue.js';
import { workerLaunch } from './parent-death.js';
import { WorkerWatch, watchAllocationFailure } from './worker-watch.js';
import type { PdfDelivery, RenderResult } from './job.js';
import type { Holdings } from '../retention/holdings.js';
import { OLD_GENERATION_CLEARING_FLAG } from '../retention/old-generation-clearing.js';
import { scrubAfterAnswer } from '../retention/scrub-timer.js';
import { wipe } from '../retention/wipe.js';
import { sendDelivery, sendOptions, type WorkerMessage } from './worker-messages.js';

/**
 * The pool's settings carry the names of the service's settings (config.ts,
 * where each is described): WORKERS, SPARE_WORKERS, COMPILE_TIMEOUT_MS,
 * QUEUE_LIMIT, QUEUE_TIMEOUT_MS, WORKER_MAX_JOBS, MAX_WORKER_MEMORY_MB.
 */
export interface PoolOptions
  extends Pick<
    Config,
    'workers' | 'spareWorkers' | 'compileTimeoutMs' | 'queueLimit' | 'queueTimeoutMs' | 'workerMaxJobs' | 'maxWorkerMemoryMb'
  > {
  engine: EngineOptions;
  /** Environment of worker processes (see sandbox.ts). */
  env: NodeJS.ProcessEnv;
  /** Worker entry script; defaults to the compiled worker.js beside this file. */
  workerScript?: string;
}

/** Why a worker was replaced: `unresponsive` is a busy worker that took no CPU for SILENT_MS (stopped, or stuck). */
export type RestartReason = 'timeout' | 'memory' | 'crash' | 'killed' | 'recycle' | 'unresponsive';

export interface PoolStats {
  size: number;
  ready: number;
  busy: number;
  queued: number;
  queueLimit: number;
  /** Spare workers started and waiting to replace one. */
  spare: number;
}

/** A job, and who holds its result's bytes (the frame they are read from). */
interface HeldJob {
  job: Job;
  held: Holdings;
}

/** A job waiting for a worker, or running on one. */
type Queued = Waiting<HeldJob, RenderResult>;

interface Running extends Queued {
  id: number;
  /** When the job was handed to the worker (performance.now()). */
  since: number;
  /** The worker's CPU time at the last look that found it grown, and when (performance.now()). */
  cpu?: { ticks: number; at: number };
  /** The next look at the worker (watch()). */
  watch?: NodeJS.Timeout;
  /**
   * The worker holds the job's PDF (frames.ts: Held) until the route takes or drops it
   * (deliveryOf), with the memory it reported; `taken` waits for the rest of the PDF.
   */
  holding?: { residentBytes: number; pdfBytes: number; taken?: { resolve: (rest: Buffer) => void; reject: (error: Error) => void } };
}

interface Slot {
  child: ChildProcess;
  /** The worker's frame pipe, and what reads its frames. */
  pipe: Socket;
  reader: FrameReader;
  /** A spare takes no job until it replaces a worker that ended. */
  role: 'worker' | 'spare';
  state: 'starting' | 'idle' | 'busy' | 'stopping';
  /**
   * When it last became idle (performance.now()). A new worker's is 0: idle the longest, it takes a job
   * after the warm ones (its first compiles read fonts).
   */
  idleSince: number;
  /** Its last job left it a long clean-up after the answer (JobReport.longCleanUp). */
  cleaningUp: boolean;
  jobs: number;
  /** The worker asked to be replaced (eviction-cost.ts): it is, once idle. */
  replacementAsked?: boolean;
  running?: Running;
  /** Set when the pool itself ends the worker, with the reason to report. */
  killedFor?: RestartReason;
  /** The worker reported a failed allocation before dying. */
  allocationFailed?: boolean;
  /** Its memory and CPU time, sampled while it is busy. */
  watcher?: WorkerWatch;
  /** The resident memory it reported with its last outcome (none before its first). */
  reportedBytes?: number;
  /**
   * The worker ended with part of what it was sent unread (its pipe ended with an error, frames.ts): a job
   * it was given never started, and goes to another worker. One that read its job dies with it.
   */
  leftUnread?: boolean;
}

const DEFAULT_WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

/** A frame no answer carries: wiped, and its buffer given back to the worker's reader. */
function dropFrame(slot: Slot, frame: Frame): void {
  wipe(frame.bytes);
  slot.reader.giveBack(frame);
}

/**
 * Node flags of a worker (none of the server's own are passed on). Request
 * content that became JavaScript strings in the worker (a failed template's
 * message, warnings, asset names, an e-invoice's XML and the values V8
 * copies out of it) is collected at the job's end (worker.ts,
 * `--expose-gc`), and what it held is cleared: the young generation by
 * `--clear-free-memory`, the old one by the flag of the worker's V8
 * (retention/old-generation-clearing.ts). What each costs: docs/retention.md.
 *
 * A background optimizing compile holds the function it compiles, and so
 * the variables it closes over (an e-invoice's XML among them), until
 * JavaScript next runs in the worker: past the answer, from about the 38th
 * e-invoice a worker handled, in most runs. The worker compiles on its main
 * thread instead (`--no-concurrent-recompilation`, which covers Maglev too;
 * `--no-concurrent-osr` says the same of on-stack replacement, in case).
 *
 * What `--clear-free-memory` costs a young collection grows with the
 * young generation's size, which V8 grows to tens of MiB in a worker. The
 * bench's documents allocate 6 KB to 270 KB of JavaScript a job (an
 * e-invoice's finishing the most), so semi-spaces of 1 MiB are room
 * enough: at 2 MiB, the young collection after a job cost 0.2 to 0.3 ms
 * instead of 0.7 to 1.7 ms (the e-invoice example, in one process with
 * these flags, Node 24). A job that allocates more collects its young
 * generation more often; the only strings of its request a job that
 * succeeds makes, its asset names, each live for the one call that maps it
 * (engine.ts, mapAssets), so none lives through two collections into the
 * old generation.
 *
 * And the young generation stays at that size (`--min-semi-space-size`
 * too): V8 otherwise shrinks it to semi-spaces of 0.5 MiB (a
 * memory-reducing collection, after a failure or warnings) and grows it
 * again, and as far as we can tell the pages it gives up are kept mapped
 * with what they held. In `test/retention.test.ts`, the case of an asset's
 * name in the engines' path tables found both names' strings in one of a
 * worker's 256 KiB pages after the job's young collection in 4 of 8 runs of
 * the file on Node 24; held at 2 MiB, in none of 9, and at 1 MiB in none
 * of 5 (a worker's job with assets is now followed by a collection of the
 * whole heap too, worker.ts). At 1 MiB rather than 2, a worker stays
 * smaller: its RSS over 300 six-page reports on Typst 0.14 went from 150
 * to 200 MiB held at 2 MiB, 158 to 169 as V8 sized it, 148 to 168 at
 * 1 MiB, for the same CPU.
 *
 * Nor through incremental marking (`--no-incremental-marking`): a
 * collection of the whole heap marked in steps between allocations keeps
 * what a step found alive, even if it dies before the collection ends, and
 * moves such young objects to the old generation, which a job that succeeds
 * does not clear. An asset's path, alive for the one call that maps it,
 * was so found in the old generation after the job: by a fresh-clone CI
 * run's scan once, and in one process with these flags (jobs with an SVG
 * of 20,000 links and the image it links to) after 1 to 29 % of the jobs
 * in nine runs of 40 to 300; with each collection of the whole heap marked
 * at once, after none of 900.
 *
 * And on the worker's main thread alone (`--single-threaded-gc`): the
 * collection of the whole heap after a failed template or a job with
 * assets (worker.ts) took 6 ms of the main thread and about 9 ms more of
 * V8's helper threads, on the cores the other workers and the server
 * share. Alone it takes 9 to 9.5 ms and nothing else, 3 to 4.5 ms less a
 * request, and the bench's workloads cost the same (docs/performance.md).
 */
export const WORKER_NODE_FLAGS = [
  '--expose-gc',
  '--clear-free-memory',
  '--max-semi-space-size=1',
  '--min-semi-space-size=1',
  OLD_GENERATION_CLEARING_FLAG,
  '--no-incremental-marking',
  '--no-concurrent-recompilation',
  '--no-concurrent-osr',
  '--single-threaded-gc',
];

/**
 * A busy worker whose CPU time has not grown for this long is stopped or
 * stuck (a compile always runs, and so does the clearing of the previous
 * job): it is replaced, and its job goes to another worker if it had not
 * read it yet.
 */
const SILENT_MS = 2000;

/** How long a worker holding a PDF waits for the route's order before the pool drops it (see deliveryOf). */
const DELIVERY_TIMEOUT_MS = 10_000;

/**
 * How often the pool looks at a busy worker's memory: as soon as it could
 * have reached the cap, growing at GROWTH_BYTES_PER_MS, but not sooner than
 * WATCH_MIN_MS nor later than WATCH_MAX_MS. Each job has one timer, armed
 * for the next thing due (a look at its memory and CPU time, its compile
 * limit), rather than the pool ticking on a fixed period: every
 * wake of the server costs CPU (about 0.2 ms each on a 2-core machine,
 * measured), and a tick every 50 ms cost 2.6 ms for a document that
 * compiles in 0.6 s, idle workers or not. The first look too is timed from
 * the worker's memory, as it reported it with its last outcome: with the
 * default cap a worker is first looked at about 230 ms into a job, and most
 * jobs end before that. A new worker's first job is looked at WATCH_MIN_MS in.
 */
const WATCH_MIN_MS = 50;
const WATCH_MAX_MS = 250;
/** The fastest a compile is taken to grow: four times what touching fresh memory reaches on a 2-core machine (1 GiB in 0.5 s). */
const GROWTH_BYTES_PER_MS = 8 * 1024 * 1024;

export class RenderPool extends EventEmitter {
  private readonly slots = new Set<Slot>();
  private readonly queue: JobQueue<HeldJob, RenderResult>;
  private nextJobId = 1;
  private closing = false;
  private consecutiveStartFailures = 0;

  /** MAX_WORKER_MEMORY_MB in bytes (0: no cap). */
  private readonly memoryLimitBytes: number;
  /** The kernel's out-of-memory kills in the service's cgroup, each claimed by one worker's end (exitReason). */
  private readonly oomKills = new OomKills();

  constructor(private readonly options: PoolOptions) {
    super();
    this.memoryLimitBytes = options.maxWorkerMemoryMb * 1024 * 1024;
    this.queue = new JobQueue(options.queueTimeoutMs);
  }

  /** Starts every worker and resolves when all are ready (spares follow); rejects if the engine cannot start. */
  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.workers }, () => this.spawn('worker')));
    this.topUpSpares();
  }

  /**
   * Queues one compile. The result's bytes are views of the frame it came
   * in, which is handed to `held` as it is read. Rejects with one of the
   * errors of ./errors.ts.
   */
  render(job: Job, held: Holdings, signal?: AbortSignal): Promise<RenderResult> {
    if (this.closing) return Promise.reject(new UnavailableError('shutting_down'));
    const idle = this.idleSlot();
    if (!idle && this.queue.length >= this.options.queueLimit) {
      return Promise.reject(new UnavailableError('queue_full'));
    }
    return new Promise<RenderResult>((resolve, reject) => {
      const queued: Queued = { input: { job, held }, resolve, reject, signal };
      if (idle) this.run(idle, queued);
      else this.queue.add(queued, 'back');
    });
  }

  stats(): PoolStats {
    let ready = 0;
    let busy = 0;
    let spare = 0;
    for (const slot of this.slots) {
      if (slot.role === 'spare') {
        if (slot.state === 'idle') spare++;
      } else if (slot.state === 'idle') ready++;
      else if (slot.state === 'busy') {
        ready++;
        busy++;
      }
    }
    return { size: this.options.workers, ready, busy, queued: this.queue.length, queueLimit: this.options.queueLimit, spare };
  }

  /** The font families every worker loads: those of the catalogue the pool sends each one as it starts. */
  fonts(): FontFamilyInfo[] {
    return this.options.engine.fonts?.families ?? [];
  }

  /**
   * Refuses new jobs, lets running ones finish for up to `graceMs`, then
   * ends every worker and resolves when all have exited.
   */
  async close(graceMs = 0): Promise<void> {
    this.closing = true;
    this.queue.clear('shutting_down');
    const deadline = Date.now() + graceMs;
    while (this.stats().busy > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all(
      [...this.slots].map(
        (slot) =>
          new Promise<void>((resolve) => {
            if (slot.child.exitCode !== null || slot.child.signalCode !== null) return resolve();
            slot.child.once('exit', () => resolve());
            slot.state = 'stopping';
            slot.child.kill('SIGKILL');
          }),
      ),
    );
  }

  private spawn(role: Slot['role']): Promise<void> {
    const spawnedAt = performance.now();
    const launch = workerLaunch();
    const child = fork(this.options.workerScript ?? DEFAULT_WORKER, launch.args, {
      env: this.options.env,
      execPath: launch.execPath,
      execArgv: [...launch.prefix, ...WORKER_NODE_FLAGS],
      // fd 3: the frame pipe. Rust and Node diagnostics can quote template content: never let them
      // reach the server's output; stderr is read only to notice a failed allocation (worker-watch.ts).
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'ipc'],
    });
    sendOptions(child, this.options.engine);
    const pipe = child.stdio[3] as Socket;
    const watcher = child.pid === undefined ? undefined : new WorkerWatch(child.pid);
    const reader = new FrameReader((frame) => this.onFrame(slot, frame));
    const slot: Slot = { child, pipe, reader, role, state: 'starting', idleSince: 0, cleaningUp: false, jobs: 0, watcher };
    watchAllocationFailure(child.stderr!, () => (slot.allocationFailed = true));
    pipe.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        wipe(chunk);
        this.kill(slot, 'crash'); // a broken frame: the worker is not to be trusted with another job
      }
    });
    pipe.on('close', () => reader.discard());
    // ECONNRESET (or EPIPE for a job still being written): the worker ended before it had read everything.
    pipe.on('error', () => (slot.leftUnread = true));
    this.slots.add(slot);
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      child.on('message', (message: WorkerMessage) => {
        if (message.type === 'ready') {
          settled = true;
          this.consecutiveStartFailures = 0;
          slot.state = 'idle';
          this.emit('started', { seconds: (performance.now() - spawnedAt) / 1000 });
          resolve();
          this.dispatch();
        } else if (message.type === 'fatal') {
          settled = true;
          reject(new Error(message.message));
        } else if (message.type === 'replace') {
          slot.replacementAsked = true;
          if (slot.state === 'idle') this.kill(slot, 'recycle');
        }
      });
      child.on('error', () => {
        /* reported through 'close' */
      });
      // 'close' comes after 'exit' and after stderr is drained, so an allocation failure is known by then.
      child.on('close', (code, signal) => {
        this.slots.delete(slot);
        watcher?.close();
        if (!settled) {
          settled = true;
          reject(new Error(`Typst worker exited during start (code ${code ?? 'none'}, signal ${signal ?? 'none'})`));
        }
        this.onExit(slot, signal);
      });
    });
  }

  private onFrame(slot: Slot, frame: Frame): void {
    if (frame.type === FrameType.Done || frame.type === FrameType.Failed || frame.type === FrameType.Held) {
      this.finish(slot, frame);
      // The result was read through Node's read buffer: an answer nobody waits for any more is not answered, so ask here too.
      scrubAfterAnswer();
      return;
    }
    if (frame.type === FrameType.Rest) {
      this.delivered(slot, frame);
      scrubAfterAnswer();
    } else dropFrame(slot, frame);
  }

  /**
   * Why a worker ended: as the pool killed it, or an allocation that failed
   * (memory); else a SIGKILL the pool did not send is the kernel's
   * out-of-memory killer (memory, as the cap would have said), or failing
   * that one from outside (killed: an operator); any other end is a crash.
   * Every SIGKILL claims an OOM kill counted, the pool's own too (oom-kills.ts).
   */
  private exitReason(slot: Slot, signal: NodeJS.Signals | null): RestartReason {
    const outOfMemory = this.oomKills.ended(signal === 'SIGKILL');
    if (slot.killedFor) return slot.killedFor;
    if (slot.allocationFailed) return 'memory';
    if (signal !== 'SIGKILL') return 'crash';
    return outOfMemory ? 'memory' : 'killed';
  }

  private onExit(slot: Slot, signal: NodeJS.Signals | null): void {
    const wasReady = slot.state !== 'starting';
    const reason = this.exitReason(slot, signal);
    const running = slot.running;
    slot.running = undefined;
    if (running?.holding) {
      clearTimeout(running.watch);
      // The route has its answer's head: a PDF still to come fails the response.
      running.holding.taken?.reject(new WorkerCrashError('worker exited before it wrote the PDF'));
    } else if (running) {
      clearTimeout(running.watch);
      if (slot.leftUnread && !this.closing) {
        // The worker ended before it had the job (killed or died while clearing the last one, or silent):
        // the job never ran, so it waits for the next worker, at the head of the queue.
        this.queue.add(running, 'front');
      } else if (this.closing && !slot.killedFor) {
        // Cut off by close() past the shutdown deadline: the client may retry elsewhere.
        running.reject(new UnavailableError('shutting_down'));
      } else if (reason === 'timeout') running.reject(new CompileTimeoutError('compile exceeded the time limit'));
      else if (reason === 'memory') running.reject(new MemoryLimitError('compile exceeded the memory limit'));
      else if (reason === 'killed') running.reject(new WorkerKilledError('worker killed from outside during the compile'));
      else running.reject(new WorkerCrashError('worker exited during the compile'));
    }
    if (this.closing) return;
    this.emit('restart', { reason });
    if (!wasReady) this.consecutiveStartFailures++;
    if (slot.role === 'worker') {
      const spare = [...this.slots].find((s) => s.role === 'spare' && s.state === 'idle');
      if (spare) {
        spare.role = 'worker';
        this.dispatch();
      } else this.respawn('worker');
    }
    this.topUpSpares();
  }

  /** Starts workers until the spares the pool keeps are there (or on their way). */
  private topUpSpares(): void {
    if (this.closing) return;
    const spares = [...this.slots].filter((s) => s.role === 'spare' && s.state !== 'stopping').length;
    for (let i = spares; i < this.options.spareWorkers; i++) this.respawn('spare');
  }

  /** Starts a worker; one that cannot even start is retried with a growing pause, not in a tight loop. */
  private respawn(role: Slot['role']): void {
    const delay = this.consecutiveStartFailures ? Math.min(100 * 2 ** (this.consecutiveStartFailures - 1), 5000) : 0;
    const start = () => {
      if (!this.closing) this.spawn(role).catch(() => undefined);
    };
    if (delay === 0) start();
    else setTimeout(start, delay).unref();
  }

  /**
   * The idle worker that answered last, its caches warm; but if its last job left it a long clean-up
   * (JobReport.longCleanUp), the one idle the longest: a worker cleans up after it has answered (worker.ts), and
   * the next job would wait for that.
   */
  private idleSlot(): Slot | undefined {
    let longest: Slot | undefined;
    let last: Slot | undefined;
    for (const slot of this.slots) {
      if (slot.role !== 'worker' || slot.state !== 'idle') continue;
      if (!longest || slot.idleSince < longest.idleSince) longest = slot;
      if (!last || slot.idleSince > last.idleSince) last = slot;
    }
    return last && !last.cleaningUp ? last : longest;
  }

  private dispatch(): void {
    for (let slot = this.idleSlot(); slot && this.queue.length > 0; slot = this.idleSlot()) {
      this.run(slot, this.queue.take()!);
    }
  }

  private run(slot: Slot, job: Queued): void {
    const id = this.nextJobId++;
    // A job given back to the queue by a worker that died starts its count of SILENT_MS afresh.
    const running: Running = { ...job, id, since: performance.now(), cpu: undefined };
    slot.running = running;
    slot.state = 'busy';
    // A pipe the worker has already closed (it died between two jobs) takes nothing: the job was never read.
    if (!slot.pipe.writable) slot.leftUnread = true;
    writeJob(slot.pipe, id, job.input.job.body, job.input.job.layout, (error) => {
      if (error) slot.leftUnread = true;
    });
    // The memory the worker reported with its last outcome times the first look; a new worker is looked at soonest.
    // Without a cap, the first look is WATCH_MAX_MS in all the same: it starts the count of SILENT_MS.
    const first = slot.reportedBytes === undefined ? WATCH_MIN_MS : this.nextLook(0, slot.reportedBytes);
    this.watch(slot, running, Math.min(first, WATCH_MAX_MS));
  }

  /**
   * When to look at a busy worker next, `elapsed` ms into its job with `bytes` resident: when it could have
   * reached the memory cap, but not sooner than WATCH_MIN_MS nor later than WATCH_MAX_MS, nor than SILENT_MS
   * or its compile limit. One millisecond past a limit, so that the look finds it passed.
   */
  private nextLook(elapsed: number, bytes: number): number {
    let next = Math.min(this.options.compileTimeoutMs - elapsed, SILENT_MS);
    const limit = this.memoryLimitBytes;
    if (limit > 0) next = Math.min(next, WATCH_MAX_MS, Math.max(WATCH_MIN_MS, (limit - bytes) / GROWTH_BYTES_PER_MS));
    return Math.max(next, 0) + 1;
  }

  /**
   * Looks at a busy worker in `ms`: ends it past the compile limit, silent for SILENT_MS, or over the
   * memory cap; otherwise looks again when the next of these could be due.
   */
  private watch(slot: Slot, running: Running, ms: number): void {
    running.watch = setTimeout(() => {
      if (slot.running !== running) return;
      const now = performance.now();
      const elapsed = now - running.since;
      if (elapsed > this.options.compileTimeoutMs) return this.kill(slot, 'timeout');
      const ticks = slot.watcher?.cpuTicks();
      if (ticks !== undefined && ticks !== running.cpu?.ticks) running.cpu = { ticks, at: now };
      else if (running.cpu && now - running.cpu.at >= SILENT_MS) return this.kill(slot, 'unresponsive');
      // Read only when there is a cap to compare it with (0 otherwise, or when it cannot be read).
      const bytes = this.memoryLimitBytes > 0 ? (slot.watcher?.residentBytes() ?? 0) : 0;
      if (bytes > this.memoryLimitBytes) return this.kill(slot, 'memory');
      this.watch(slot, running, this.nextLook(elapsed, bytes));
    }, ms).unref();
  }

  /** Ends a worker on purpose; its running job is rejected (or requeued) with the reason on exit. */
  private kill(slot: Slot, reason: RestartReason): void {
    if (slot.state === 'stopping') return;
    slot.killedFor = reason;
    slot.state = 'stopping';
    slot.child.kill('SIGKILL');
  }

  private finish(slot: Slot, frame: Frame): void {
    const running = slot.running;
    if (!running || running.id !== frame.id || running.holding) return void dropFrame(slot, frame);
    // Read first: a broken result is wiped and thrown, and the worker's end then fails the job (spawn's 'data' listener).
    let result: ReturnType<typeof readResult>;
    try {
      result = readResult(frame);
    } catch (error) {
      dropFrame(slot, frame);
      throw error;
    }
    clearTimeout(running.watch);
    release(running);
    slot.cleaningUp = result.longCleanUp;
    if (result.kind === 'held-head') {
      // Held: the header values are copied out, so that the frame's buffer is free for the rest of the PDF.
      const { held } = running.input;
      const warnings = held.hold(Buffer.from(result.warnings));
      const einvoiceWarnings = held.hold(Buffer.from(result.einvoiceWarnings));
      dropFrame(slot, frame);
      running.holding = { residentBytes: result.residentBytes, pdfBytes: result.pdfBytes };
      running.resolve({ ...result, kind: 'held', warnings, einvoiceWarnings, delivery: this.deliveryOf(slot, running) });
      return;
    }
    // The response wipes the frame once sent or abandoned; only then may the next result be read into its buffer.
    running.input.held.hold(frame.bytes, () => slot.reader.giveBack(frame));
    running.resolve(result);
    if (result.kind === 'pdf') this.emit('pdf', { byWorker: 0, byServer: result.pdf.length });
    this.ended(slot, result.residentBytes);
  }

  /**
   * The route's hold on a PDF its worker keeps: the worker waits, idle, for
   * one order (worker-messages.ts: DeliveryMessage), then sends what it did
   * not write as a Rest frame, which ends the job (delivered). A route that
   * gave no order in DELIVERY_TIMEOUT_MS (none should) has it dropped.
   */
  private deliveryOf(slot: Slot, running: Running): PdfDelivery {
    let ordered = false;
    const send = (socket: object | undefined, drop: boolean): void => {
      // A socket that cannot be sent (closed meanwhile) leaves the PDF to the pipe; a worker that takes no order is ended.
      const failed = () => (socket ? send(undefined, drop) : this.kill(slot, 'crash'));
      try {
        sendDelivery(slot.child, { type: 'deliver', id: running.id, drop }, socket, failed);
      } catch {
        failed();
      }
    };
    const order = (socket: object | undefined, drop: boolean): void => {
      ordered = true;
      clearTimeout(timeout);
      if (slot.running !== running) return;
      send(socket, drop);
      // The worker answers at once (it writes without waiting): one that does not in SILENT_MS is stuck.
      running.watch = setTimeout(() => slot.running === running && this.kill(slot, 'unresponsive'), SILENT_MS).unref();
    };
    const timeout = setTimeout(() => order(undefined, true), DELIVERY_TIMEOUT_MS).unref();
    return {
      take: (socket) =>
        new Promise<Buffer>((resolve, reject) => {
          if (ordered) return reject(new Error('the PDF was taken or dropped already'));
          if (slot.running !== running) return reject(new WorkerCrashError('worker exited before it wrote the PDF'));
          running.holding!.taken = { resolve, reject };
          order(socket, false);
        }),
      drop: () => {
        if (!ordered) order(undefined, true);
      },
    };
  }

  /** A Rest frame: what the worker did not write of a held PDF, to the route that took it; the job ends. */
  private delivered(slot: Slot, frame: Frame): void {
    const running = slot.running;
    if (!running?.holding || running.id !== frame.id) return void dropFrame(slot, frame);
    clearTimeout(running.watch);
    const { taken, residentBytes, pdfBytes } = running.holding;
    if (taken) {
      const rest = restOf(frame);
      running.input.held.hold(frame.bytes, () => slot.reader.giveBack(frame));
      taken.resolve(rest);
      this.emit('pdf', { byWorker: pdfBytes - rest.length, byServer: rest.length });
    } else dropFrame(slot, frame);
    this.ended(slot, residentBytes);
  }

  /** A job is over on `slot`: the worker is replaced if due, else takes the next job. */
  private ended(slot: Slot, residentBytes: number): void {
    slot.running = undefined;
    slot.jobs++;
    slot.reportedBytes = residentBytes;
    if (slot.replacementAsked || (this.options.workerMaxJobs > 0 && slot.jobs >= this.options.workerMaxJobs)) {
      this.kill(slot, 'recycle');
    } else if (this.memoryLimitBytes > 0 && residentBytes > this.memoryLimitBytes) {
      // The job peaked between two samples and kept the memory: the next job starts in a fresh worker.
      this.kill(slot, 'memory');
    } else {
      slot.state = 'idle';
      slot.idleSince = performance.now();
    }
    this.dispatch();
  }
}
