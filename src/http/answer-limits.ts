/**
 * Answers that wait for their readers. A PDF is held in the server from the
 * moment its worker sends it until its client has taken the last byte (or
 * left): clients that read slowly, or not at all, would otherwise pile up
 * memory without bound.
 *
 * - The PDFs held are bounded in total (MAX_PENDING_ANSWERS_MB), and those
 *   of one API key to half of it (request/bytes-by-key.ts): past either,
 *   new compiles are refused with 503 until readers catch up.
 * - A client that takes no byte for READER_STALL_TIMEOUT_MS is cut off; its
 *   answer is wiped like any other (retention/wipe-after-response.ts).
 *
 * A large PDF is written in slices, so that each slice the client takes
 * counts as progress (one write of the whole PDF would only complete at its
 * last byte, and a slow but steady reader would look stalled).
 */
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PdfDelivery } from '../render/job.js';
import { onAnswerEnd } from '../retention/answer-end.js';
import { WorkerWrittenBody } from './worker-written-body.js';
import { BytesByKey, KEY_SHARE } from '../request/bytes-by-key.js';
import { holderOf } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when the PDF was over MAX_PDF_BYTES (422), for the log and metrics. */
    outputRefused?: 'pdf_too_large';
  }
}

const SLICE_BYTES = 1024 * 1024;

export interface AnswerLimitOptions {
  /** Bytes of answers held for their readers before new compiles are refused (0: no bound). */
  maxPendingBytes: number;
  readerStallMs: number;
}

/**
 * Emits 'stalled' (with the request id) for each reader cut off: the
 * response never finishes, so no onResponse hook sees it.
 */
export class AnswerLimits extends EventEmitter<{ stalled: [requestId: string] }> {
  private held = 0;
  private readonly heldByKey = new BytesByKey();

  constructor(private readonly options: AnswerLimitOptions) {
    super();
  }

  /** The answers held for their readers are at the bound, or `key`'s at its share: a new compile of the key's is refused. */
  full(key: object): boolean {
    const { maxPendingBytes } = this.options;
    return maxPendingBytes > 0 && (this.held >= maxPendingBytes || this.heldByKey.of(key) >= maxPendingBytes * KEY_SHARE);
  }

  /** Bytes of answers held for their readers now. */
  pendingBytes(): number {
    return this.held;
  }

  /**
   * Sends `pdf` as the answer, counting its bytes until the response is
   * done, and cutting off a reader that stalls. A response already closed
   * (its client left while the answer was made) is counted not at all: its
   * 'close' has come and gone.
   */
  send(request: FastifyRequest, reply: FastifyReply, pdf: Buffer): FastifyReply {
    if (!reply.raw.closed) this.holdUntilClosed(request, reply, pdf.length);
    if (pdf.length <= SLICE_BYTES) return reply.send(pdf);
    return reply.send(Readable.from(slices(pdf), { objectMode: false }));
  }

  /** Sends a PDF of `pdfBytes` its worker holds (worker-written-body.ts), counted and cut off as `send` does. */
  sendHeld(request: FastifyRequest, reply: FastifyReply, pdfBytes: number, delivery: PdfDelivery): FastifyReply {
    if (!reply.raw.closed) this.holdUntilClosed(request, reply, pdfBytes);
    return reply.send(new WorkerWrittenBody(reply.raw, delivery));
  }

  private holdUntilClosed(request: FastifyRequest, reply: FastifyReply, heldBytes: number): void {
    const key = holderOf(request);
    this.held += heldBytes;
    this.heldByKey.add(key, heldBytes);
    const socket = request.raw.socket;
    const onStall = () => {
      this.emit('stalled', request.id);
      socket.destroy();
    };
    // Node's socket timeout counts a write the kernel is still taking as activity; once the
    // answer is finished, Node replaces this timeout with its keep-alive timeout.
    // (A request made with app.inject has a stand-in socket without timeouts.)
    socket.setTimeout?.(this.options.readerStallMs);
    socket.on('timeout', onStall);
    onAnswerEnd(reply.raw, () => {
      this.held -= heldBytes;
      this.heldByKey.add(key, -heldBytes);
      socket.off('timeout', onStall);
    });
  }
}

/** Views of `bytes`, SLICE_BYTES each: no copy, so wiping the buffer wipes them all. */
function* slices(bytes: Buffer): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) yield bytes.subarray(at, at + SLICE_BYTES);
}
