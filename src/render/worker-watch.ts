/**
 * What the pool watches of a busy worker (pool.ts: watch), read from /proc
 * (Linux only): its resident memory, killed past the cap (a worker also
 * reports its memory with each outcome), and its CPU time, which stops
 * growing only if the worker is stopped or stuck (a compile always runs).
 * RSS is what the machine actually gives the process; an address-space
 * limit (RLIMIT_AS) is not used because V8 and the compiler reserve far
 * more virtual memory than they ever touch.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const PAGE_BYTES = 4096;

/**
 * One /proc file of one process, kept open: the pool samples a busy worker
 * up to 20 times a second, and opening, reading and closing the file each
 * time cost the server about 0.05 ms per small request.
 */
class ProcFile {
  private fd: number | undefined;
  private readonly text = Buffer.alloc(1024);

  constructor(private readonly path: string) {}

  /** Its text, or undefined when it cannot be read (the process is gone, or the host has no /proc). */
  read(): string | undefined {
    try {
      this.fd ??= openSync(this.path, 'r');
      const length = readSync(this.fd, this.text, 0, this.text.length, 0);
      return this.text.toString('latin1', 0, length);
    } catch {
      return undefined;
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

export class WorkerWatch {
  private readonly statm: ProcFile;
  private readonly stat: ProcFile;

  constructor(pid: number) {
    this.statm = new ProcFile(`/proc/${pid}/statm`);
    this.stat = new ProcFile(`/proc/${pid}/stat`);
  }

  /** Resident set size in bytes, or undefined when it cannot be read. */
  residentBytes(): number | undefined {
    // statm: size resident shared text lib data dt, in pages.
    const pages = Number(this.statm.read()?.split(' ')[1]);
    return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
  }

  /** User and system CPU time in clock ticks, or undefined when it cannot be read. */
  cpuTicks(): number | undefined {
    // stat: the command in parentheses, then fields 3 on, separated by spaces; utime and stime are fields 14 and 15.
    const text = this.stat.read();
    const fields = text?.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields?.[11]) + Number(fields?.[12]);
    return Number.isFinite(ticks) ? ticks : undefined;
  }

  close(): void {
    this.statm.close();
    this.stat.close();
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
