/**
 * Node reads every stream (client connections, worker pipes) into a native
 * buffer of 64 KiB and hands JavaScript a copy of what was read; the buffer
 * of the last read stays allocated, holding those bytes, until the next
 * read of any stream replaces it. An idle server would so keep the last
 * request it read (headers, key and body) or the last PDF a worker sent,
 * beyond the reach of any `fill(0)`.
 *
 * Shortly after the last answer (SCRUB_AFTER_MS with no other answer),
 * 64 KiB of zeros are sent over a private loopback connection and read
 * back: that read replaces the retained buffer, so what stays behind is
 * zeros (and the buffer it replaced is filled as it is freed, see
 * freed-memory-fill.ts). While requests keep coming, each read replaces
 * the last anyway, so a busy server does not scrub at all. Node offers no
 * way to choose or wipe the buffers of a server's connections (`onread` is
 * for sockets one creates), hence this.
 */
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';

const READ_BUFFER_BYTES = 64 * 1024;
const ZEROS = Buffer.alloc(READ_BUFFER_BYTES);

/** Quiet time after an answer before the scrub: well inside the promise's "at the answer", and free under load. */
const SCRUB_AFTER_MS = 20;

let writer: Socket | undefined;
let timer: NodeJS.Timeout | undefined;

/** Opens the private connection; until then scrubReadBuffer() does nothing. */
export async function startReadBufferScrub(): Promise<void> {
  if (writer) return;
  const server = createServer();
  const host = await new Promise<string>((resolve, reject) => {
    server.once('error', () => {
      // A host without IPv4 loopback: the IPv6 one.
      server.once('error', reject);
      server.listen(0, '::1', () => resolve('::1'));
    });
    server.listen(0, '127.0.0.1', () => resolve('127.0.0.1'));
  });
  const { port } = server.address() as AddressInfo;
  const socket = connect({ port, host, noDelay: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    server.on('connection', (reader) => {
      // Only our own connection is kept; the listener closes as soon as it has it.
      if (reader.remotePort !== socket.localPort) return void reader.destroy();
      server.close();
      reader.on('data', () => undefined);
      reader.on('error', () => undefined);
      reader.unref();
      resolve();
    });
  });
  socket.on('error', () => (writer = undefined));
  socket.unref();
  writer = socket;
}

/** Replaces the retained read buffer with zeros once no answer has asked for it for SCRUB_AFTER_MS. */
export function scrubReadBuffer(): void {
  if (!writer) return;
  if (timer) timer.refresh();
  else timer = setTimeout(() => writer?.write(ZEROS), SCRUB_AFTER_MS).unref();
}
