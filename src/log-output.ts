/**
 * The log's output when it is not a terminal: JSON lines written to a file
 * descriptor in batches (4 KiB, or what is there 100 ms after a line that
 * found nothing waiting), through libuv's threads so that a slow reader
 * never holds up the server, and written out at once as the process exits.
 *
 * Hand-written, not pino.destination (sonic-boom 4): the flush that pino
 * makes as the process exits retries a failed write every 100 ms for ever,
 * whatever the error. A service whose log reader had gone (EPIPE) then
 * never ended, not even on a second SIGTERM: its one thread waited in that
 * loop. Here a write that fails for any reason but a full pipe ends the
 * output, and later lines are dropped.
 */
import fs from 'node:fs';

/** A batch is written once it has this many bytes. */
const BATCH_BYTES = 4096;
/**
 * The longest a line waits in the batch, timed from the line that starts
 * it, not on a fixed period: a periodic flush wakes an idle server ten
 * times a second, which cost it about 0.4 ms of CPU a wake.
 */
const FLUSH_AFTER_MS = 100;
/** After a full pipe (EAGAIN), the wait before the next try. */
const RETRY_MS = 20;
/** What the log may hold for a reader that does not keep up; lines past it are dropped. */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** As the process exits, the longest a full pipe may hold the last lines up, in all. */
const EXIT_WAIT_MS = 1000;

/** Blocks the thread for `ms` (only as the process exits, when no event loop is left to wait with). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export class LogOutput {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** A write handed to libuv's threads and not yet done. */
  private writing = false;
  private flushDue = false;
  /** The reader is gone, or the descriptor failed: nothing more is written. */
  private broken = false;
  /** Callers of flush() waiting for what was there to be written (or dropped). */
  private flushed: Array<() => void> = [];

  constructor(private readonly fd = 1) {}

  /** pino's destination interface: one line, with its newline. */
  write(line: string): boolean {
    if (this.broken || this.pendingBytes + line.length > MAX_PENDING_BYTES) return true;
    const bytes = Buffer.from(line);
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    if (this.pendingBytes >= BATCH_BYTES) this.writeOut();
    else this.flushSoon();
    return true;
  }

  /** Writes what is waiting now (pino's `logger.flush`); `done` once it is written, or dropped. */
  flush(done?: () => void): void {
    if (done) this.flushed.push(done);
    this.writeOut();
    this.settle();
  }

  /**
   * Writes what is waiting at once, blocking, as the process exits. A batch
   * still being written by libuv's threads is left to them (written twice,
   * it would repeat lines). Gives up on a pipe that stays full past
   * EXIT_WAIT_MS and on any other failed write.
   */
  flushSync(): void {
    const giveUpAt = Date.now() + EXIT_WAIT_MS;
    while (!this.broken && this.pendingBytes > 0) {
      const chunk = this.take();
      let done = 0;
      try {
        done = fs.writeSync(this.fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() >= giveUpAt) {
          this.end();
          return;
        }
        sleepSync(RETRY_MS);
      }
      this.putBack(chunk, done);
    }
  }

  private flushSoon(): void {
    if (this.flushDue) return;
    this.flushDue = true;
    setTimeout(() => {
      this.flushDue = false;
      this.writeOut();
    }, FLUSH_AFTER_MS).unref();
  }

  /** Hands what is waiting to libuv's threads, unless a write is still going out (its end writes the rest). */
  private writeOut(): void {
    if (this.writing || this.broken || this.pendingBytes === 0) return;
    this.writing = true;
    const chunk = this.take();
    fs.write(this.fd, chunk, 0, chunk.length, null, (error, done) => {
      this.writing = false;
      if (error && error.code !== 'EAGAIN') {
        this.end();
        return;
      }
      this.putBack(chunk, error ? 0 : done);
      if (this.pendingBytes === 0) {
        this.settle();
        return;
      }
      if (error) setTimeout(() => this.writeOut(), RETRY_MS).unref();
      else this.writeOut();
    });
  }

  /** All that is waiting, as one buffer, taken out of the queue. */
  private take(): Buffer {
    const chunk = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    return chunk;
  }

  /** What of `chunk` was not written goes back to the head of the queue. */
  private putBack(chunk: Buffer, written: number): void {
    if (written >= chunk.length) return;
    const rest = chunk.subarray(written);
    this.pending.unshift(rest);
    this.pendingBytes += rest.length;
  }

  /** Calls the flush() callers once nothing waits or goes out. */
  private settle(): void {
    if (this.writing || this.pendingBytes > 0) return;
    for (const done of this.flushed.splice(0)) done();
  }

  private end(): void {
    this.broken = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.settle();
  }
}
