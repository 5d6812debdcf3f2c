/**
 * Resident memory of a worker process, read from /proc (Linux only).
 *
 * The pool samples each busy worker (pool.ts: watch) and kills it once it
 * holds more than the cap; a worker also reports its
 * memory with each outcome. RSS is what the machine actually gives the
 * process; an address-space limit (RLIMIT_AS) is not used because V8 and the
 * compiler reserve far more virtual memory than they ever touch.
 */
import { closeSync, openSync, readSync } from 'node:fs';

export const PAGE_BYTES = 4096;

/**
 * Resident set size of one process, from `/proc/PID/statm` kept open: the
 * pool samples a busy worker up to 20 times a second, and opening, reading
 * and closing the file each time cost the server about 0.05 ms per small
 * request.
 */
export class ResidentMemory {
  private fd: number | undefined;
  private readonly text = Buffer.alloc(128);

  constructor(private readonly pid: number) {}

  /** In bytes, or undefined when it cannot be read (the process is gone, or the host has no /proc). */
  bytes(): number | undefined {
    try {
      this.fd ??= openSync(`/proc/${this.pid}/statm`, 'r');
      // statm: size resident shared text lib data dt, in pages.
      const length = readSync(this.fd, this.text, 0, this.text.length, 0);
      const pages = Number(this.text.toString('latin1', 0, length).split(' ')[1]);
      return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
    } catch {
      return undefined;
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/**
 * What a worker prints when an allocation fails: Rust's allocation error
 * hook (then abort), or V8 running out of heap. Both mean the compile asked
 * for more memory than the machine would give, in one step too big for the
 * sampling to see.
 */
const ALLOCATION_FAILED = /memory allocation of \d+ bytes failed|JavaScript heap out of memory|Reached heap limit/;
const TAIL_CHARS = 200;

/**
 * Reads a worker's stderr only to notice an allocation failure. The output
 * is never kept beyond a short tail nor logged: it can quote template content.
 */
export function watchAllocationFailure(stderr: NodeJS.ReadableStream, onFailure: () => void): void {
  let tail = '';
  let seen = false;
  stderr.on('data', (chunk: Buffer) => {
    if (seen) return;
    tail = (tail + chunk.toString('latin1')).slice(-TAIL_CHARS * 2);
    if (ALLOCATION_FAILED.test(tail)) {
      seen = true;
      tail = '';
      onFailure();
    } else {
      tail = tail.slice(-TAIL_CHARS);
    }
  });
}
