/**
 * The render pool: N worker processes, one job each at a time, a bounded
 * queue in front, and supervision behind. A job that overruns the compile
 * limit gets its worker killed; a worker that dies, overruns or has served
 * its quota is replaced, and the jobs beside it are not disturbed.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { EngineOptions } from './engine.js';
import {
  CompileTimeoutError,
  MemoryLimitError,
  PoolUnavailableError,
  TemplateError,
  WorkerCrashError,
} from './errors.js';
import type { FontFamilyInfo } from './fonts.js';
import { residentBytes, watchAllocationFailure, watchMemory } from './memory-watch.js';
import type { JobMessage, Warning, WorkerMessage } from './protocol.js';

export interface PoolOptions {
  size: number;
  /** Compile limit per job; the worker is killed past it. */
  timeoutMs: number;
  /** Jobs allowed to wait; past it, new jobs are refused at once. */
  queueLimit: number;
  /** Longest wait in the queue before a job is refused. */
  queueTimeoutMs: number;
  /** Replace a worker after this many jobs (0: never). */
  maxJobsPerWorker: number;
  /** Resident memory a worker may hold, in bytes; past it the worker is killed (0: no cap). */
  memoryLimitBytes?: number;
  engine: EngineOptions;
  /** Environment of worker processes (see workerEnvironment in main). */
  env: NodeJS.ProcessEnv;
  /** Worker entry script; defaults to the compiled worker.js beside this file. */
  workerScript?: string;
}

export interface RenderInput {
  body: Uint8Array;
  template: string;
}

export interface RenderResult {
  pdf: Buffer;
  pages: number;
  compileMs: number;
  warnings: Warning[];
}

export type RestartReason = 'timeout' | 'memory' | 'crash' | 'recycle';

export interface PoolStats {
  size: number;
  ready: number;
  busy: number;
  queued: number;
  queueLimit: number;
}

interface Pending {
  input: RenderInput;
  resolve: (result: RenderResult) => void;
  reject: (error: Error) => void;
  queueTimer?: NodeJS.Timeout;
  onAbort?: () => void;
  signal?: AbortSignal;
}

interface Running extends Pending {
  id: number;
  timer: NodeJS.Timeout;
  /** Stops the memory sampling of this job's worker. */
  stopWatch: () => void;
  /** The worker acknowledged the job: from then on its death is the job's failure. */
  started?: boolean;
}

interface Slot {
  child: ChildProcess;
  state: 'starting' | 'idle' | 'busy' | 'stopping';
  jobs: number;
  running?: Running;
  /** Set when the pool itself ends the worker, with the reason to report. */
  killedFor?: RestartReason;
  /** The worker reported a failed allocation before dying. */
  allocationFailed?: boolean;
}

const DEFAULT_WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

export class RenderPool extends EventEmitter {
  private readonly slots = new Set<Slot>();
  private readonly queue: Pending[] = [];
  private nextJobId = 1;
  private loadedFonts: FontFamilyInfo[] = [];
  private closing = false;
  private consecutiveStartFailures = 0;

  constructor(private readonly options: PoolOptions) {
    super();
  }

  /** Starts every worker and resolves when all are ready; rejects if the engine cannot start. */
  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.size }, () => this.spawn()));
  }

  /** Queues one compile. Rejects with one of the errors of ./errors.ts. */
  render(input: RenderInput, signal?: AbortSignal): Promise<RenderResult> {
    if (this.closing) return Promise.reject(new PoolUnavailableError('shutting_down'));
    const idle = this.idleSlot();
    if (!idle && this.queue.length >= this.options.queueLimit) {
      return Promise.reject(new PoolUnavailableError('queue_full'));
    }
    return new Promise<RenderResult>((resolve, reject) => {
      const pending: Pending = { input, resolve, reject, signal };
      if (idle) return this.run(idle, pending);
      this.enqueue(pending, 'back');
    });
  }

  /** Queues a job with its queue deadline; a client that goes away while it waits drops it. */
  private enqueue(pending: Pending, end: 'front' | 'back'): void {
    pending.queueTimer = setTimeout(() => {
      this.unqueue(pending);
      pending.reject(new PoolUnavailableError('queue_timeout'));
    }, this.options.queueTimeoutMs);
    if (pending.signal) {
      pending.onAbort = () => {
        this.unqueue(pending);
        pending.reject(new PoolUnavailableError('client_gone'));
      };
      pending.signal.addEventListener('abort', pending.onAbort, { once: true });
    }
    if (end === 'front') this.queue.unshift(pending);
    else this.queue.push(pending);
  }

  stats(): PoolStats {
    let ready = 0;
    let busy = 0;
    for (const slot of this.slots) {
      if (slot.state === 'idle') ready++;
      if (slot.state === 'busy') {
        ready++;
        busy++;
      }
    }
    return { size: this.options.size, ready, busy, queued: this.queue.length, queueLimit: this.options.queueLimit };
  }

  /** The font families the workers loaded, as the last worker to start reported them. */
  fonts(): FontFamilyInfo[] {
    return this.loadedFonts;
  }

  /** Process ids of the live workers (for tests and operators). */
  pids(): number[] {
    return [...this.slots].map((s) => s.child.pid).filter((pid): pid is number => pid !== undefined);
  }

  /**
   * Refuses new jobs, lets running ones finish for up to `graceMs`, then
   * ends every worker and resolves when all have exited.
   */
  async close(graceMs = 0): Promise<void> {
    this.closing = true;
    for (const pending of this.queue.splice(0)) {
      this.release(pending);
      pending.reject(new PoolUnavailableError('shutting_down'));
    }
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

  private spawn(): Promise<void> {
    const child = fork(this.options.workerScript ?? DEFAULT_WORKER, [JSON.stringify(this.options.engine)], {
      serialization: 'advanced',
      env: this.options.env,
      execArgv: [],
      // Rust and Node diagnostics can quote template content: never let them reach the server's output.
      // stderr is read only to notice a failed allocation (see memory-watch.ts).
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const slot: Slot = { child, state: 'starting', jobs: 0 };
    watchAllocationFailure(child.stderr!, () => (slot.allocationFailed = true));
    this.slots.add(slot);
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      child.on('message', (message: WorkerMessage) => {
        if (message.type === 'ready') {
          settled = true;
          this.consecutiveStartFailures = 0;
          slot.state = 'idle';
          this.loadedFonts = message.fonts;
          this.emit('ready', { pid: child.pid, startMs: message.startMs, fontBytes: message.fontBytes });
          resolve();
          this.dispatch();
        } else if (message.type === 'started') {
          if (slot.running?.id === message.id) slot.running.started = true;
        } else if (message.type === 'fatal') {
          settled = true;
          reject(new Error(message.message));
        } else {
          this.finish(slot, message);
        }
      });
      child.on('error', () => {
        /* reported through 'close' */
      });
      // 'close' comes after 'exit' and after stderr is drained, so an allocation failure is known by then.
      child.on('close', (code, signal) => {
        this.slots.delete(slot);
        if (!settled) {
          settled = true;
          reject(new Error(`Typst worker exited during start (code ${code ?? 'none'}, signal ${signal ?? 'none'})`));
        }
        this.onExit(slot);
      });
    });
  }

  private onExit(slot: Slot): void {
    const wasReady = slot.state !== 'starting';
    const reason: RestartReason = slot.killedFor ?? (slot.allocationFailed ? 'memory' : 'crash');
    const running = slot.running;
    slot.running = undefined;
    if (running && reason === 'crash' && !running.started && !this.closing) {
      // The worker died before it had the job (killed from outside while idle): the job never ran, so it waits for the next worker.
      clearTimeout(running.timer);
      running.stopWatch();
      this.requeue(running);
    } else if (running) {
      clearTimeout(running.timer);
      running.stopWatch();
      this.release(running);
      // Cut off by close() past the shutdown deadline: the client may retry elsewhere.
      if (this.closing && !slot.killedFor) running.reject(new PoolUnavailableError('shutting_down'));
      else if (reason === 'timeout') running.reject(new CompileTimeoutError('compile exceeded the time limit'));
      else if (reason === 'memory') running.reject(new MemoryLimitError('compile exceeded the memory limit'));
      else running.reject(new WorkerCrashError('worker exited during the compile'));
    }
    if (this.closing) return;
    this.emit('restart', { reason });
    if (!wasReady) this.consecutiveStartFailures++;
    // A worker that cannot even start is retried with a growing pause, not in a tight loop.
    const delay = Math.min(100 * 2 ** Math.max(0, this.consecutiveStartFailures - 1), 5000);
    setTimeout(() => {
      if (!this.closing) this.spawn().catch(() => undefined);
    }, this.consecutiveStartFailures ? delay : 0).unref();
  }

  private idleSlot(): Slot | undefined {
    for (const slot of this.slots) if (slot.state === 'idle') return slot;
    return undefined;
  }

  private dispatch(): void {
    let slot: Slot | undefined;
    while (this.queue.length > 0 && (slot = this.idleSlot())) {
      const pending = this.queue.shift()!;
      this.run(slot, pending);
    }
  }

  private run(slot: Slot, pending: Pending): void {
    if (pending.queueTimer) clearTimeout(pending.queueTimer);
    const id = this.nextJobId++;
    const timer = setTimeout(() => this.kill(slot, 'timeout'), this.options.timeoutMs);
    const limit = this.options.memoryLimitBytes ?? 0;
    const pid = slot.child.pid;
    const stopWatch = limit > 0 && pid !== undefined ? watchMemory(pid, limit, () => this.kill(slot, 'memory')) : () => undefined;
    slot.running = { ...pending, id, timer, stopWatch };
    slot.state = 'busy';
    const message: JobMessage = { type: 'job', id, body: pending.input.body, template: pending.input.template };
    slot.child.send(message);
  }

  /** Ends a worker on purpose; its running job is rejected with the reason's error on exit. */
  private kill(slot: Slot, reason: RestartReason): void {
    if (slot.state === 'stopping') return;
    slot.killedFor = reason;
    slot.state = 'stopping';
    slot.child.kill('SIGKILL');
  }

  private finish(slot: Slot, message: Exclude<WorkerMessage, { type: 'ready' | 'fatal' | 'started' }>): void {
    const running = slot.running;
    if (!running || running.id !== message.id) return;
    clearTimeout(running.timer);
    running.stopWatch();
    slot.running = undefined;
    slot.jobs++;
    this.release(running);
    if (message.type === 'done') {
      const pdf = Buffer.from(message.pdf.buffer, message.pdf.byteOffset, message.pdf.byteLength);
      running.resolve({ pdf, pages: message.pages, compileMs: message.compileMs, warnings: message.warnings });
    } else {
      running.reject(new TemplateError(message.failure));
    }
    if (this.options.maxJobsPerWorker > 0 && slot.jobs >= this.options.maxJobsPerWorker) {
      this.kill(slot, 'recycle');
    } else if (this.overMemory(slot)) {
      // The job peaked between two samples and kept the memory: the next job starts in a fresh worker.
      this.kill(slot, 'memory');
    } else {
      slot.state = 'idle';
    }
    this.dispatch();
  }

  private overMemory(slot: Slot): boolean {
    const limit = this.options.memoryLimitBytes ?? 0;
    const rss = limit > 0 && slot.child.pid !== undefined ? residentBytes(slot.child.pid) : undefined;
    return rss !== undefined && rss > limit;
  }

  /** Puts a job that never ran back at the head of the queue, with a fresh queue deadline. */
  private requeue(running: Running): void {
    this.release(running);
    const { input, resolve, reject, signal } = running;
    this.enqueue({ input, resolve, reject, signal }, 'front');
  }

  private unqueue(pending: Pending): void {
    const index = this.queue.indexOf(pending);
    if (index >= 0) this.queue.splice(index, 1);
    this.release(pending);
  }

  private release(pending: Pending): void {
    if (pending.queueTimer) clearTimeout(pending.queueTimer);
    if (pending.onAbort) pending.signal?.removeEventListener('abort', pending.onAbort);
  }
}
