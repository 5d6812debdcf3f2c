/**
 * The machine's share of the server's CPU: a bare `node:http` server that
 * relays each body to a child process over a pipe, and answers with what the
 * child sends back. The child holds each body for the time the request asks
 * (spinning, as a worker computes) and sends back as many bytes as it asks:
 * given a workload's body, compile time and PDF size, the relay does what
 * the service's server must do for it at the least, with no checks, no
 * retention and no framework. What its CPU per request grows with is the
 * machine: how much colder the server wakes the longer it slept. (A PDF of
 * WORKER_WRITES_PDF_BYTES or more the service's worker writes to the socket
 * itself, which the relay does not: every bench workload's PDF is smaller.)
 *
 * The relay runs in a process of its own (this file with `--serve`), with
 * Node's default settings, and its child is this file with `--hold`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);

/**
 * On the pipes, frames of a u32 (LE) length and that many bytes. An order to
 * the holder is the time to hold it (µs) and the bytes to answer with, each
 * a u32 (LE), then the body; an answer is the bytes.
 */
const LENGTH_BYTES = 4;

/** A frame's length, then `head`, each a u32 (LE), for a frame of `head` and `bodyBytes` more. */
function frameHead(head: number[], bodyBytes: number): Buffer {
  const bytes = Buffer.alloc(LENGTH_BYTES * (1 + head.length));
  bytes.writeUInt32LE(LENGTH_BYTES * head.length + bodyBytes, 0);
  for (const [i, value] of head.entries()) bytes.writeUInt32LE(value, LENGTH_BYTES * (1 + i));
  return bytes;
}

export class Relay {
  private constructor(
    private readonly child: ChildProcess,
    /** The loopback port the relay listens on. */
    private readonly port: number,
  ) {}

  static async start(): Promise<Relay> {
    const child = fork(SELF, ['--serve'], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (message) => resolve(message as number));
      child.once('exit', (code, signal) => reject(new Error(`the bench's relay ended as it started (${signal ?? code})`)));
    });
    return new Relay(child, port);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The URL whose requests the relay holds `holdMs` and answers with `answerBytes` bytes. */
  url(holdMs: number, answerBytes: number): string {
    return `http://127.0.0.1:${this.port}/${Math.round(holdMs * 1000)}/${answerBytes}`;
  }

  /** Ends the relay (SIGTERM's default); its holder ends as its channel closes. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    await exited;
  }
}

/**
 * The relay: one holder, which holds the bodies one after another, in the
 * order they came, and answers them in that order.
 */
function serve(): void {
  const holder = fork(SELF, ['--hold'], { execArgv: [], stdio: ['pipe', 'pipe', 'inherit', 'ipc'] });
  const answers = new FrameReader();
  const waiting: ((bytes: Buffer) => void)[] = [];
  holder.stdout!.on('data', (chunk: Buffer) => {
    for (const answer of answers.push(chunk)) waiting.shift()?.(answer);
  });
  const server = createServer((request, response) => {
    // The URL from url(): /<hold µs>/<answer bytes>, then sendLoad's own path.
    const [, holdUs, answerBytes] = (request.url ?? '').split('/');
    const chunks: Buffer[] = [];
    let bodyBytes = 0;
    request.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bodyBytes += chunk.length;
    });
    request.on('end', () => {
      waiting.push((answer) => {
        response.writeHead(200, { 'content-type': 'application/pdf', 'content-length': answer.length });
        response.end(answer);
      });
      // The body's chunks as they came, with no copy: the least a relay can do.
      const pipe = holder.stdin!;
      pipe.cork();
      pipe.write(frameHead([Number(holdUs), Number(answerBytes)], bodyBytes));
      for (const chunk of chunks) pipe.write(chunk);
      pipe.uncork();
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
  // A bench that ended without stopping it (killed) ends it too.
  process.on('disconnect', () => process.exit(0));
}

/** Reads the frames in a stream's chunks, joining a frame's chunks once it has them all. */
class FrameReader {
  private chunks: Buffer[] = [];
  private bytes = 0;

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    const frames: Buffer[] = [];
    while (this.bytes >= LENGTH_BYTES) {
      if (this.chunks[0]!.length < LENGTH_BYTES) this.chunks = [Buffer.concat(this.chunks)];
      const end = LENGTH_BYTES + this.chunks[0]!.readUInt32LE(0);
      if (this.bytes < end) break;
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      frames.push(all.subarray(LENGTH_BYTES, end));
      this.chunks = end < all.length ? [all.subarray(end)] : [];
      this.bytes -= end;
    }
    return frames;
  }
}

/** The holder: for each order, spins for its time, then answers with its bytes. */
function hold(): void {
  const orders = new FrameReader();
  process.stdin.on('data', (chunk: Buffer) => {
    for (const order of orders.push(chunk)) {
      const until = performance.now() + order.readUInt32LE(0) / 1000;
      const answerBytes = order.readUInt32LE(4);
      const answer = Buffer.concat([frameHead([], answerBytes), Buffer.alloc(answerBytes, 0x25)]);
      while (performance.now() < until) {
        // Computes, as a worker does: the relay's server sleeps meanwhile.
      }
      process.stdout.write(answer);
    }
  });
  process.on('disconnect', () => process.exit(0));
}

if (process.argv[1] === SELF && process.argv[2] === '--serve') serve();
else if (process.argv[1] === SELF && process.argv[2] === '--hold') hold();
