/**
 * The body of an answer whose PDF its worker holds (render/pool.ts:
 * PdfDelivery). Fastify pipes it into the response after its onSend hooks,
 * the response's head set: on the first read, the head goes to the socket,
 * and the socket's handle is lent to the worker, which writes the PDF
 * straight into the socket's kernel buffer. What that buffer did not take at
 * once comes back by the worker's pipe and is pushed here, so a slow reader
 * is served as any other answer. The socket is lent only when the head is in
 * the kernel already (nothing buffered in Node, and this response the
 * socket's current one): otherwise, the whole PDF comes by the pipe.
 *
 * The server never holds such a PDF unless its reader is slow, and neither
 * reads nor writes it: a 1.7 MB PDF cost the server about 1 ms of CPU more by
 * the pipe and its own write. Below about 0.5 MB, the order and this stream
 * cost it as much as they save (docs/performance.md).
 */
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { PdfDelivery } from '../render/job.js';

/**
 * Whether the response's head has been handed to the kernel, and nothing
 * else is waiting to be written to its connection: the response has the
 * socket (no earlier answer on it is still going out), which is open for
 * writing, plain TCP, and holds nothing in Node (not corked, no write in
 * progress); and the answer's length is in its head (no chunks).
 */
function headInKernel(response: ServerResponse): boolean {
  const socket = response.socket;
  return (
    socket !== null &&
    response.headersSent &&
    response.hasHeader('content-length') &&
    response.writableLength === 0 &&
    socket.writable &&
    !socket.writableEnded &&
    socket.writableLength === 0 &&
    !('encrypted' in socket)
  );
}

export class WorkerWrittenBody extends Readable {
  private asked = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly delivery: PdfDelivery,
  ) {
    super();
  }

  override _read(): void {
    if (this.asked) return;
    this.asked = true;
    const { response } = this;
    response.flushHeaders();
    const handle = headInKernel(response) ? (response.socket as { _handle?: object | null })._handle : undefined;
    this.delivery.take(handle ?? undefined).then(
      (rest) => {
        if (rest.length > 0) this.push(rest);
        this.push(null);
      },
      (error: Error) => this.destroy(error),
    );
  }
}
