/**
 * Node reads every stream into a native buffer and hands JavaScript what
 * was read; the buffer of the last read stays behind, holding those bytes,
 * until the next read replaces it. An idle server would so keep the last
 * request it read (headers, key and body) or the last PDF a worker sent,
 * beyond the reach of any `fill(0)`. Two such buffers:
 *
 * - Streams read in JavaScript (the workers' pipes, Redis): each read is a
 *   new store of 64 KiB, and the last one lives until the next read of any
 *   such stream. 64 KiB of zeros sent over a private loopback connection
 *   and read back replace it.
 * - Client connections, which Node's HTTP parser reads itself, into one
 *   buffer of 64 KiB that it keeps for every connection (no copy is made
 *   of what it reads but the body's chunks, which are wiped as received:
 *   request/receive.ts). A connection of our own to the HTTP server sends it
 *   more than 64 KiB of zeros: the parser reads them into that buffer,
 *   finds no request in them and closes the connection, answering 400 to
 *   no one but us (nothing is logged of it: http/client-errors.ts).
 *
 * Both run shortly after the last answer unless a later request is in
 * flight, and 1 s after it whatever is in flight (scrub-timer.ts), and
 * what they replace is filled as it is freed (freed-memory-fill.ts). While
 * requests keep coming, each read replaces the last, as far as it reaches.
 * Node offers no way to choose or wipe the buffers a server reads into
 * (`onread` is for sockets one creates), hence this.
 */
import type { Server } from 'node:http';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';

const READ_BUFFER_BYTES = 64 * 1024;
const ZEROS = Buffer.alloc(READ_BUFFER_BYTES);
/** Twice the HTTP parser's buffer, so that its one read of them fills it whole. */
const PARSER_ZEROS = Buffer.alloc(2 * READ_BUFFER_BYTES);
/** A scrub connection the server has not closed by then is closed by us. */
const PARSER_SCRUB_TIMEOUT_MS = 1000;

let writer: Socket | undefined;
/**
 * The process's HTTP servers, whose parsers all read into one buffer: it is
 * scrubbed through the first of them that listens. And the scrub's
 * connection while open.
 */
const httpServers: Server[] = [];
let parserScrub: Socket | undefined;
/** A scrub was asked for while the last one's connection was still open. */
let parserScrubAgain = false;

/** Opens the private connection; until then scrubReadBuffers() scrubs only the HTTP parser's buffer. */
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

/** A server whose connections' parser buffer is scrubbed too, from its first answer on. */
export function scrubParserBufferOf(server: Server): void {
  httpServers.push(server);
}

/** An IPv4 address as an IPv6 socket reports it (`::ffff:127.0.0.1`), as IPv4. */
const plain = (address: string | undefined) => (address?.startsWith('::ffff:') ? address.slice(7) : address);

/** Whether a connection the HTTP server accepted is the scrub's own: its close calls for no scrub. */
export function isParserScrub(socket: Socket): boolean {
  return (
    parserScrub !== undefined &&
    socket.remotePort === parserScrub.localPort &&
    plain(socket.remoteAddress) === plain(parserScrub.localAddress)
  );
}

/** Replaces the retained read buffers with zeros (when scrub-timer.ts says). */
export function scrubReadBuffers(): void {
  writer?.write(ZEROS);
  // A scrub asked for while the last one's connection is open runs again once it has closed.
  if (parserScrub) parserScrubAgain = true;
  else scrubParser(undefined);
}

/**
 * Sends PARSER_ZEROS to the HTTP server's own port, on loopback: on IPv6
 * loopback for a server on `::`, then on IPv4 if that fails. The parser
 * reads the zeros in one read of its whole buffer (a 64 KiB write on a new
 * loopback connection arrives whole; the zeros are twice that).
 */
function scrubParser(host: string | undefined): void {
  const address = httpServers.find((server) => server.listening)?.address() ?? null;
  if (address === null || typeof address === 'string') return;
  const target = host ?? (address.address === '::' ? '::1' : address.address === '0.0.0.0' ? '127.0.0.1' : address.address);
  const socket = connect({ port: address.port, host: target, noDelay: true });
  let connected = false;
  parserScrub = socket;
  socket.on('connect', () => {
    connected = true;
    socket.write(PARSER_ZEROS);
  });
  socket.on('data', () => undefined);
  socket.on('error', () => undefined);
  socket.on('close', () => {
    if (parserScrub !== socket) return;
    parserScrub = undefined;
    if (!connected && target === '::1') scrubParser('127.0.0.1');
    else if (parserScrubAgain) {
      parserScrubAgain = false;
      scrubParser(undefined);
    }
  });
  socket.setTimeout(PARSER_SCRUB_TIMEOUT_MS, () => socket.destroy());
  socket.unref();
}
