/**
 * The log's output when it is not a terminal: JSON lines written to a
 * non-blocking file descriptor in batches (4 KiB, or what is there 100 ms
 * after a line that found nothing waiting), on the main thread. A write
 * takes what the descriptor takes at once, so a slow reader never holds
 * the server up: the rest waits, in order, for the descriptor to take more.
 *
 * Hand-written, not pino.destination (sonic-boom 4): the flush that pino
 * makes as the process exits retries a failed write every 100 ms for ever,
 * whatever the error. A service whose log reader had gone (EPIPE) then
 * never ended, not even on a second SIGTERM: its one thread waited in that
 * loop. Here a write that fails for any reason but a full pipe ends the
 * output, and later lines are dropped. Writing on the main thread, not in
 * libuv's threads, leaves no batch in flight whose end is unknown, which
 * the flush at exit would reorder, cut or lose.
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
/** What the log may hold for a reader that does not keep up; lines past it are dropped, and counted. */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** As the process exits, the longest a full pipe may hold the last lines up, in all. */
const EXIT_WAIT_MS = 1000;
/**
 * The most a write holds, in whole lines (a longer line goes alone): a pipe
 * takes a write of at most PIPE_BUF bytes (4096 on Linux) whole or not at
 * all. A larger write into a pipe that fills stops at any byte, and if the
 * reader then takes no more before the process exits, the log ends in half
 * a line. (A write is then some tens of lines, far under IOV_MAX buffers.)
 */
const ATOMIC_WRITE_BYTES = 4096;

/** Blocks the thread for `ms` (only as the process exits, when no event loop is left to wait with). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export class LogOutput {
  /** Lines not yet written, in order; the first may be partly written (`headWritten`). */
  private pending: Buffer[] = [];
  private headWritten = 0;
  private pendingBytes = 0;
  /** Lines dropped since the last one queued, while the reader did not keep up. */
  private dropped = 0;
  /** A flush is due FLUSH_AFTER_MS after the line that started the batch. */
  private flushDue = false;
  /** The descriptor took all it could (a full pipe): the next try is due RETRY_MS after. */
  private retryDue = false;
  /** The reader is gone, or the descriptor failed: nothing more is written. */
  private broken = false;

  /**
   * `fd` must be non-blocking if it is a pipe or a socket (Node makes fd 1 so once `process.stdout` is read).
   * `droppedLine` words the line that says how many lines a slow reader made the log drop.
   */
  constructor(
    private readonly fd: number,
    private readonly droppedLine: (count: number) => string,
  ) {}

  /** pino's destination interface: one line, with its newline. */
  write(line: string): boolean {
    if (this.broken) return true;
    const bytes = Buffer.from(line);
    if (this.pendingBytes + bytes.length > MAX_PENDING_BYTES) {
      this.dropped++;
      return true;
    }
    this.queueDropped();
    this.queue(bytes);
    if (this.pendingBytes >= BATCH_BYTES) this.writeNow();
    else this.flushSoon();
    return true;
  }

  /** Writes what the descriptor takes now (pino's `logger.flush`); `done` at once. */
  flush(done?: () => void): void {
    this.writeNow();
    done?.();
  }

  /** pino calls this after a `fatal` line, with the process going on: the same as flush(). */
  flushSync(): void {
    this.writeNow();
  }

  /** Writes what waits as the process exits, waiting at most EXIT_WAIT_MS in all for a full pipe. */
  flushAtExit(): void {
    if (this.broken) return;
    this.queueDropped();
    const giveUpAt = Date.now() + EXIT_WAIT_MS;
    while (!this.writeOut() && Date.now() < giveUpAt) sleepSync(RETRY_MS);
  }

  private queue(bytes: Buffer): void {
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
  }

  /** The line that counts the lines dropped since the last one queued, if any were. */
  private queueDropped(): void {
    if (this.dropped === 0) return;
    this.queue(Buffer.from(this.droppedLine(this.dropped)));
    this.dropped = 0;
  }

  private flushSoon(): void {
    if (this.flushDue || this.retryDue) return;
    this.flushDue = true;
    setTimeout(() => {
      this.flushDue = false;
      this.writeNow();
    }, FLUSH_AFTER_MS).unref();
  }

  /** Writes what the descriptor takes now, unless a retry after a full pipe is due (it writes it then). */
  private writeNow(): void {
    if (this.retryDue || this.writeOut()) return;
    this.retryDue = true;
    setTimeout(() => {
      this.retryDue = false;
      this.writeNow();
    }, RETRY_MS).unref();
  }

  /** Writes what the descriptor takes now. Returns false when a full pipe left some waiting. */
  private writeOut(): boolean {
    while (this.pendingBytes > 0 && !this.broken) {
      const buffers = [this.pending[0]!.subarray(this.headWritten)];
      let bytes = buffers[0]!.length;
      for (let i = 1; i < this.pending.length; i++) {
        bytes += this.pending[i]!.length;
        if (bytes > ATOMIC_WRITE_BYTES) break;
        buffers.push(this.pending[i]!);
      }
      let written: number;
      try {
        written = fs.writevSync(this.fd, buffers);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return false;
        this.end();
        break;
      }
      this.consume(written);
    }
    return true;
  }

  /** Takes `written` bytes off the head of what waits. */
  private consume(written: number): void {
    this.pendingBytes -= written;
    let left = written + this.headWritten;
    let lines = 0;
    while (lines < this.pending.length && left >= this.pending[lines]!.length) left -= this.pending[lines++]!.length;
    this.pending.splice(0, lines);
    this.headWritten = left;
  }

  private end(): void {
    this.broken = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.headWritten = 0;
  }
}
