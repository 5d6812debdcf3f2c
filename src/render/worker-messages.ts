/**
 * What the pool and a worker tell each other over Node's IPC channel: the
 * pool sends the worker its options once, right after the fork, and the
 * worker answers ready or fatal; later it may ask, once, to be replaced
 * (eviction-cost.ts); and for a PDF a worker holds, the pool orders it
 * written to the client's socket (sent along), by the pipe, or dropped. The options travel here rather than on the command
 * line, where the font catalogue they hold would fill every `ps` line of a
 * worker.
 * Nothing of a request ever takes this channel (jobs are frames, frames.ts).
 */
import type { ChildProcess } from 'node:child_process';
import type { EngineOptions } from './engine.js';

/** Server -> worker, once. */
interface OptionsMessage {
  type: 'options';
  options: EngineOptions;
}

/** Worker -> server: the engines are up, or why they are not; later, that a new worker would now cost less than this one. */
export type WorkerMessage = { type: 'ready' } | { type: 'fatal'; message: string } | { type: 'replace' };

/**
 * Server -> worker, for a PDF the worker holds (frames.ts: Held): write it
 * to the client's socket, sent with this message as a handle, or send it
 * by the pipe (no handle), or wipe it (`drop`). Ids and a flag only.
 */
export interface DeliveryMessage {
  type: 'deliver';
  id: number;
  drop: boolean;
}

/** The client's socket as a worker receives it: the libuv handle alone, which nothing reads from. */
export interface ReceivedSocket {
  fd: number;
  close(): void;
}

/**
 * The pool's side. The socket goes as its bare handle (Node's 'net.Native'):
 * a `net.Socket` would be rebuilt in the worker, which would start reading
 * it, and closed in the server. On failure (the worker gone) `onFailed` runs.
 */
export function sendDelivery(child: ChildProcess, message: DeliveryMessage, socket: object | undefined, onFailed: () => void): void {
  // biome-ignore lint/suspicious/noExplicitAny: Node takes a bare libuv handle here, which its types do not name.
  child.send(message, socket as any, (error) => error && onFailed());
}

/** The worker's side: each delivery order, with the socket handle when one came. */
export function onDelivery(listener: (message: DeliveryMessage, socket: ReceivedSocket | undefined) => void): void {
  process.on('message', (message: unknown, socket: unknown) => {
    if ((message as DeliveryMessage | null)?.type === 'deliver') listener(message as DeliveryMessage, socket as ReceivedSocket | undefined);
    else (socket as ReceivedSocket | undefined)?.close();
  });
}

/**
 * The pool writes the options right after the fork, so they wait in the
 * channel before the worker's event loop first turns. A worker still
 * without them after this long was not started by the pool, or the pool is
 * broken: it reports so and ends rather than wait for ever. (A worker whose
 * server is gone ends at once: see exitWithParent in worker.ts.)
 */
const OPTIONS_TIMEOUT_MS = 10_000;

/**
 * Sent right after the fork, before the worker has even loaded: Node keeps
 * a message that arrives before the worker listens for one until it does.
 */
export function sendOptions(child: ChildProcess, options: EngineOptions): void {
  // A failed send (the worker already gone) is reported as the child's 'error', and its exit follows.
  child.send({ type: 'options', options } satisfies OptionsMessage);
}

/** The worker's side: its options, or undefined if none came in time. */
export function receiveOptions(): Promise<EngineOptions | undefined> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      if ((message as OptionsMessage | null)?.type === 'options') done((message as OptionsMessage).options);
    };
    const timer = setTimeout(() => done(undefined), OPTIONS_TIMEOUT_MS);
    const done = (options: EngineOptions | undefined): void => {
      clearTimeout(timer);
      process.off('message', onMessage);
      resolve(options);
    };
    process.on('message', onMessage);
  });
}
