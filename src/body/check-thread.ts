/**
 * Checks large bodies on a thread of their own, so that the event loop goes
 * on answering (/healthz, other requests, answers being sent) while a 10 MB
 * body is checked: the check is linear, but 10 MB of tiny tokens is still
 * 50 to 150 ms of CPU, and on the one thread that would be that long a stall
 * for everything else.
 *
 * The body's memory is moved to the thread and back (a transfer of its
 * ArrayBuffer, no copy), so there is still one copy of the bytes, which the
 * caller wipes as before; what comes back besides the bytes is the check's
 * result, made of offsets and the service's own messages, never request
 * content. Bodies up to INLINE_BYTES are checked where they are: that takes
 * at most a few milliseconds, less than the round trip would cost in latency.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { poolBufferMoved, poolSlot, releaseBody } from './body-pool.js';
import { type BodyCheck, type CheckOptions, checkBody } from './json-check.js';

/** Bodies up to this size are checked on the event loop's own thread. */
const INLINE_BYTES = 256 * 1024;

interface Request {
  id: number;
  buffer: ArrayBuffer;
  offset: number;
  length: number;
}

type Reply = { id: number; buffer: ArrayBuffer; check: BodyCheck } | { id: number; buffer: ArrayBuffer; error: string };

/** The body (the same bytes: moved back from the thread if they went there) and its check. */
export interface CheckedBytes {
  bytes: Buffer;
  check: BodyCheck;
}

export class BodyChecker {
  private thread: Worker | undefined;
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (result: CheckedBytes) => void; reject: (error: Error) => void; offset: number; length: number; slot: number | undefined }
  >();

  constructor(private readonly options: CheckOptions) {
    // Started at once, so that the first large body does not wait for the thread to start.
    this.start();
  }

  /**
   * Checks `body`. Large bodies are moved to the checking thread: `body` is
   * then empty (detached) and the bytes are those of the answer. A thrown
   * error means the bytes were wiped.
   */
  check(body: Buffer): Promise<CheckedBytes> {
    if (body.length <= INLINE_BYTES || !(body.buffer instanceof ArrayBuffer)) {
      try {
        return Promise.resolve({ bytes: body, check: checkBody(body, this.options) });
      } catch (error) {
        releaseBody(body);
        return Promise.reject(error as Error);
      }
    }
    const thread = this.start();
    const id = this.nextId++;
    const request: Request = { id, buffer: body.buffer, offset: body.byteOffset, length: body.length };
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, offset: body.byteOffset, length: body.length, slot: poolSlot(body) });
      try {
        thread.postMessage(request, [body.buffer as ArrayBuffer]);
      } catch (error) {
        // Not moved (a buffer that cannot be transferred): still ours to wipe.
        this.waiting.delete(id);
        releaseBody(body);
        reject(error as Error);
      }
    });
  }

  /** Ends the thread (it does not keep the process alive meanwhile). */
  async close(): Promise<void> {
    await this.thread?.terminate();
    this.thread = undefined;
  }

  private start(): Worker {
    if (this.thread) return this.thread;
    const thread = new Worker(new URL(import.meta.url), { workerData: { bodyChecker: this.options } });
    thread.unref();
    thread.on('message', (reply: Reply) => {
      const waiting = this.waiting.get(reply.id);
      if (!waiting) return;
      this.waiting.delete(reply.id);
      // A pool buffer (body-pool.ts) is back: the pool keeps it under its new ArrayBuffer object.
      if (waiting.slot !== undefined) poolBufferMoved(waiting.slot, reply.buffer);
      const bytes = Buffer.from(reply.buffer, waiting.offset, waiting.length);
      if ('error' in reply) releaseBody(bytes);
      if ('error' in reply) waiting.reject(new Error(reply.error));
      else waiting.resolve({ bytes, check: reply.check });
    });
    thread.on('error', () => undefined);
    // A thread that ends takes the bodies it held with it (its memory is released); their requests fail.
    thread.on('exit', () => {
      if (this.thread === thread) this.thread = undefined;
      for (const waiting of this.waiting.values()) waiting.reject(new Error('the body check thread ended'));
      this.waiting.clear();
    });
    this.thread = thread;
    return thread;
  }
}

/** The checking thread: checks each body it is sent and sends it back with the outcome. */
function serve(options: CheckOptions): void {
  parentPort!.on('message', ({ id, buffer, offset, length }: Request) => {
    const body = Buffer.from(buffer, offset, length);
    let reply: Reply;
    try {
      reply = { id, buffer, check: checkBody(body, options) };
    } catch (error) {
      body.fill(0);
      reply = { id, buffer, error: (error as Error).message };
    }
    parentPort!.postMessage(reply, [buffer]);
  });
}

if (!isMainThread && (workerData as { bodyChecker?: CheckOptions } | null)?.bodyChecker) {
  serve((workerData as { bodyChecker: CheckOptions }).bodyChecker);
}
