/**
 * The jobs waiting for a worker: first in, first out, each with a deadline
 * (past it, 503) and dropped when its client goes away. A job put back
 * because its worker died before taking it goes to the front.
 */
import { UnavailableError, type UnavailableReason } from './errors.js';

/** What a job needs while it waits: its deadline and its client's abort signal. */
interface Timed {
  signal?: AbortSignal;
  deadline?: NodeJS.Timeout;
  onAbort?: () => void;
}

export interface Waiting<I, R> extends Timed {
  input: I;
  resolve: (result: R) => void;
  reject: (error: Error) => void;
}

export class JobQueue<I, R> {
  private readonly jobs: Waiting<I, R>[] = [];

  constructor(private readonly timeoutMs: number) {}

  get length(): number {
    return this.jobs.length;
  }

  add(job: Waiting<I, R>, end: 'front' | 'back'): void {
    job.deadline = setTimeout(() => this.drop(job, 'queue_timeout'), this.timeoutMs);
    if (job.signal) {
      job.onAbort = () => this.drop(job, 'client_gone');
      job.signal.addEventListener('abort', job.onAbort, { once: true });
    }
    if (end === 'front') this.jobs.unshift(job);
    else this.jobs.push(job);
  }

  /** The next job, no longer waiting. */
  take(): Waiting<I, R> | undefined {
    const job = this.jobs.shift();
    if (job) release(job);
    return job;
  }

  /** Refuses every waiting job. */
  clear(reason: UnavailableReason): void {
    for (const job of this.jobs.splice(0)) {
      release(job);
      job.reject(new UnavailableError(reason));
    }
  }

  private drop(job: Waiting<I, R>, reason: UnavailableReason): void {
    const index = this.jobs.indexOf(job);
    if (index < 0) return;
    this.jobs.splice(index, 1);
    release(job);
    job.reject(new UnavailableError(reason));
  }
}

/** Stops a job's deadline and abort listener: it is no longer waiting. */
export function release(job: Timed): void {
  if (job.deadline) clearTimeout(job.deadline);
  if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
  job.deadline = undefined;
  job.onAbort = undefined;
}
