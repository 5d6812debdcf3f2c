/**
 * Checks large bodies on a thread of their own, so that the event loop goes
 * on answering (/healthz, other requests, answers being sent) while a 10 MB
 * body is checked: the check is linear, but 10 MB of tiny tokens is still
 * 50 to 150 ms of CPU, and on the one thread that would be that long a stall
 * for everything else.
 *
 * A body in a pool buffer (retention/body-pool.ts: shared memory) is read by the
 * thread where it is; the thread gets each pool buffer once and is then
 * told only which one, and where the body is in it. Any other body's memory
 * is moved to the thread and back (a transfer of its ArrayBuffer, no copy).
 * Either way there is one copy of the bytes, which the caller wipes as
 * before; what comes back besides the bytes is the check's result, made of
 * offsets and the service's own messages, never request content. Bodies below LARGE_DATA_BYTES are checked where they are: that takes
 * at most a few milliseconds, less than the round trip would cost in latency.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { poolBuffer, poolSlot, releaseBody } from '../retention/body-pool.js';
import { wipe } from '../retention/wipe.js';
import { checkForm } from './form-check.js';
import { type BodyCheck, type CheckOptions, checkBody, LARGE_DATA_BYTES } from '../bytes/json-check.js';

/**
 * A body to check: in pool buffer `slot` (with the buffer itself the first
 * time the thread is told of that slot), or in `buffer`, moved there.
 */
interface Request {
  id: number;
  /** A multipart form's boundary (form-check.ts); absent: a JSON body. */
  boundary?: Uint8Array;
  slot?: number;
  buffer?: ArrayBuffer | SharedArrayBuffer;
  offset: number;
  length: number;
}

/** The outcome, with the moved buffer if the body was moved. */
type Reply = { id: number; buffer?: ArrayBuffer } & ({ check: BodyCheck } | { error: string });

/** The body (the same bytes: moved back from the thread if they went there) and its check. */
export interface CheckedBytes {
  bytes: Buffer;
  check: BodyCheck;
}

export class BodyChecker {
  private thread: Worker | undefined;
  private nextId = 0;
  /** Each body being checked, with its place: a moved body's own view is empty (detached) until it comes back. */
  private readonly waiting = new Map<
    number,
    { resolve: (result: CheckedBytes) => void; reject: (error: Error) => void; body: Buffer; offset: number; length: number }
  >();
  /** The pool buffers the running thread has been given. */
  private poolSlotsSent = new Set<number>();

  constructor(private readonly options: CheckOptions) {
    // Started at once, so that the first large body does not wait for the thread to start.
    this.start();
  }

  /**
   * Checks `body`: a JSON body, or with `boundary` a multipart form. Large bodies are checked on the checking thread; one
   * that is not in a pool buffer is moved there: `body` is then empty
   * (detached) and the bytes are those of the answer. A thrown error means
   * the bytes were wiped.
   */
  check(body: Buffer, boundary?: Uint8Array): Promise<CheckedBytes> {
    const slot = poolSlot(body);
    if (body.length < LARGE_DATA_BYTES || (slot === undefined && !(body.buffer instanceof ArrayBuffer))) {
      try {
        return Promise.resolve({ bytes: body, check: checkEither(body, boundary, this.options) });
      } catch (error) {
        releaseBody(body);
        return Promise.reject(error as Error);
      }
    }
    const thread = this.start();
    const id = this.nextId++;
    const request: Request = { id, offset: body.byteOffset, length: body.length };
    if (boundary) request.boundary = boundary;
    if (slot === undefined) request.buffer = body.buffer;
    else {
      request.slot = slot;
      if (!this.poolSlotsSent.has(slot)) request.buffer = poolBuffer(slot);
      this.poolSlotsSent.add(slot);
    }
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, body, offset: body.byteOffset, length: body.length });
      try {
        thread.postMessage(request, slot === undefined ? [body.buffer as ArrayBuffer] : []);
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
      const bytes = reply.buffer ? Buffer.from(reply.buffer, waiting.offset, waiting.length) : waiting.body;
      if ('error' in reply) releaseBody(bytes);
      if ('error' in reply) waiting.reject(new Error(reply.error));
      else waiting.resolve({ bytes, check: reply.check });
    });
    thread.on('error', () => undefined);
    // A thread that ends fails the requests it held: a moved body went with it (its memory is released),
    // a body in a pool buffer is still here, and is wiped.
    thread.on('exit', () => {
      if (this.thread === thread) {
        this.thread = undefined;
        this.poolSlotsSent = new Set();
      }
      for (const { body, reject } of this.waiting.values()) {
        if (poolSlot(body) !== undefined) releaseBody(body);
        reject(new Error('the body check thread ended'));
      }
      this.waiting.clear();
    });
    this.thread = thread;
    return thread;
  }
}

/** A JSON body's check, or a form's when there is a boundary. */
const checkEither = (body: Buffer, boundary: Uint8Array | undefined, options: CheckOptions) =>
  boundary ? checkForm(body, boundary, options) : checkBody(body, options);

/** The checking thread: checks each body it is sent and sends it back with the outcome. */
function serve(options: CheckOptions): void {
  const pool = new Map<number, SharedArrayBuffer>();
  parentPort!.on('message', ({ id, slot, buffer, offset, length, boundary }: Request) => {
    if (slot !== undefined && buffer) pool.set(slot, buffer as SharedArrayBuffer);
    const moved = slot === undefined ? (buffer as ArrayBuffer) : undefined;
    const body = Buffer.from(moved ?? pool.get(slot!)!, offset, length);
    let reply: Reply;
    try {
      reply = { id, buffer: moved, check: checkEither(body, boundary, options) };
    } catch (error) {
      // A body that could not be checked is wiped by the main thread (releaseBody), not here.
      reply = { id, buffer: moved, error: (error as Error).message };
    } finally {
      // This thread's copy of the form's boundary (the message's).
      wipe(boundary);
    }
    parentPort!.postMessage(reply, moved ? [moved] : []);
  });
}

if (!isMainThread && (workerData as { bodyChecker?: CheckOptions } | null)?.bodyChecker) {
  serve((workerData as { bodyChecker: CheckOptions }).bodyChecker);
}
