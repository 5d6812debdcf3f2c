/**
 * Starts the real service (`node dist/src/main.js`) on a free loopback port,
 * as a user would, and gives tests its URL, its output and a way to stop it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
export const TEST_KEY = 'test-key-0123456789';

export interface Service {
  url: string;
  process: ChildProcess;
  /** Everything the service printed on stdout and stderr so far. */
  output(): string;
  /** Process ids of the service's worker processes. */
  workerPids(): number[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  /** A command the service is started through, e.g. `['prlimit', '--core=unlimited', '--']`. */
  prefix?: string[];
}

/**
 * Services start through setpriv (util-linux), which has the kernel send
 * them SIGTERM when this process ends, however it ends: a test file the
 * runner cut off at its time limit left its services running. Found on this
 * process's PATH, not the service's: some tests give the service a PATH
 * without setpriv, or with one that fails.
 */
const SETPRIV = (process.env.PATH ?? '')
  .split(delimiter)
  .map((dir) => join(dir, 'setpriv'))
  .find((candidate) => existsSync(candidate));
const STOPPED_WITH_TEST = SETPRIV ? [SETPRIV, '--pdeathsig', 'SIGTERM', '--'] : [];

export async function startService(env: Record<string, string> = {}, options: StartOptions = {}): Promise<Service> {
  const [command = process.execPath, ...args] = [...STOPPED_WITH_TEST, ...(options.prefix ?? []), process.execPath, MAIN];
  const child = spawn(command, args, {
    // No spare worker unless a test asks for one: each would be one more process to start on a 2-core machine.
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      API_KEYS: TEST_KEY,
      WORKERS: '2',
      SPARE_WORKERS: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${output}`)), 20_000);
    const check = () => {
      const match = /listening on (http:\/\/[^\s]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} during start:\n${output}`));
    });
  });
  return {
    url,
    process: child,
    output: () => output,
    workerPids: () => childPids(child.pid!),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
  };
}

/** Direct children of `pid`, from /proc/<pid>/task/<tid>/children (none once it has exited). */
export function childPids(pid: number): number[] {
  const pids: number[] = [];
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return pids;
  }
  for (const tid of threads) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) pids.push(...text.split(/\s+/).map(Number));
    } catch {
      /* thread ended */
    }
  }
  return pids;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface GenerateOptions {
  key?: string | null;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** POSTs a generate request; `body` objects are sent as JSON. */
export async function generate(service: Service, body: unknown, options: GenerateOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  const key = options.key === undefined ? TEST_KEY : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return fetch(`${service.url}/v1/pdf/generate`, {
    method: 'POST',
    headers,
    body: (typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body)) as BodyInit,
    signal: options.signal,
  });
}

/** A 200's PDF bytes (the answer's text is the assertion's message otherwise). */
export async function pdfBytesOf(res: Response): Promise<Buffer> {
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, bytes.toString());
  return bytes;
}

/** An error answer's message, after checking its status and that it is the API's one shape: JSON `{"error": "<message>"}`. */
export async function errorOf(res: Response, status = 400): Promise<string> {
  assert.equal(res.status, status);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as { error: string };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(typeof body.error, 'string');
  return body.error;
}

/**
 * Log lines reach the output in batches, at most LOG_FLUSH_MS apart (main.ts):
 * waits long enough for every line of what happened so far to be written.
 */
export const LOG_FLUSH_MS = 100;
export function logsWritten(): Promise<void> {
  return new Promise((r) => setTimeout(r, 3 * LOG_FLUSH_MS));
}

/** Waits until the pool reports all workers ready again. */
export async function waitReady(service: Service, workers: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${service.url}/readyz`);
    const body = (await res.json()) as { ready?: number };
    if (res.status === 200 && body.ready === workers) return;
    if (Date.now() > deadline) throw new Error(`pool not back to ${workers} workers: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The rate-limit headers of a response, as numbers (NaN when missing). */
export function rateLimitHeaders(res: Response): { limit: number; remaining: number; reset: number } {
  return {
    limit: Number(res.headers.get('x-ratelimit-limit') ?? NaN),
    remaining: Number(res.headers.get('x-ratelimit-remaining') ?? NaN),
    reset: Number(res.headers.get('x-ratelimit-reset') ?? NaN),
  };
}

/** /readyz's body. */
export async function readiness(service: Service): Promise<Record<string, unknown>> {
  const res = await fetch(`${service.url}/readyz`);
  return (await res.json()) as Record<string, unknown>;
}
