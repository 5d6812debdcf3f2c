/**
 * Helpers of the hostile-input suite (test/hostile/): send one case, time
 * its answer, then prove the service is whole again (a normal request
 * succeeds quickly and the pool is back to full strength).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { TestContext } from 'node:test';
import { generate, waitReady, type GenerateOptions, type Service } from './service.js';

/** The hostile suite tests the pool and the HTTP layer, not the rate limit: lift it out of the way. */
export const NO_RATE_LIMIT = { RATE_LIMIT_PER_MINUTE: '1000000' } as const;

/** A normal request after a hostile one must be answered within this (generous on a shared 2-core machine). */
export const RECOVERED_WITHIN_MS = 3000;

/** Every status the API's error table lets the generate endpoint answer. */
export const DESIGN_STATUSES = new Set([200, 400, 401, 404, 413, 415, 422, 429, 500, 503]);

export interface Answer {
  status: number;
  ms: number;
  /** The JSON error message, or undefined for a PDF. */
  error?: string;
  headers: Headers;
  bytes?: Uint8Array;
}

/** Sends one generate request and reads the whole answer, timed. */
export async function send(service: Service, body: unknown, options: GenerateOptions = {}): Promise<Answer> {
  const started = Date.now();
  const res = await generate(service, body, options);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const ms = Date.now() - started;
  const isJson = (res.headers.get('content-type') ?? '').startsWith('application/json');
  const error = isJson ? (JSON.parse(Buffer.from(bytes).toString('utf8')) as { error: string }).error : undefined;
  return { status: res.status, ms, error, headers: res.headers, bytes: isJson ? undefined : bytes };
}

/** Records a case's outcome in the test report (`# status 422 in 1034 ms`). */
export function record(t: TestContext, answer: { status: number; ms: number; error?: string }): void {
  t.diagnostic(`status ${answer.status} in ${answer.ms} ms${answer.error ? `: ${answer.error.slice(0, 120)}` : ''}`);
}

/** The service is whole: the pool is back to `workers` and a normal request succeeds quickly. */
export async function assertRecovered(service: Service, workers: number): Promise<void> {
  await waitReady(service, workers, 15_000);
  const started = Date.now();
  const res = await generate(service, { data: { n: 7 }, template: 'Normal request #data.n' });
  const elapsed = Date.now() - started;
  assert.equal(res.status, 200, `normal request after a hostile one: ${res.status} ${await res.clone().text()}`);
  assert.equal(
    Buffer.from(await res.arrayBuffer())
      .subarray(0, 5)
      .toString(),
    '%PDF-',
  );
  assert.ok(elapsed < RECOVERED_WITHIN_MS, `normal request took ${elapsed} ms`);
  await waitReady(service, workers, 15_000);
}

/** Resident memory of a process in MiB (Linux /proc). */
export function rssMb(pid: number): number {
  return (Number(readFileSync(`/proc/${pid}/statm`, 'latin1').split(' ')[1]) * 4096) / (1024 * 1024);
}

/** A loopback listener to set as every proxy a compiler could use: it counts connection attempts. */
export interface ProxyTrap {
  url: string;
  env: Record<string, string>;
  connections(): number;
  close(): Promise<void>;
}

export async function proxyTrap(): Promise<ProxyTrap> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    env: { HTTP_PROXY: url, HTTPS_PROXY: url, ALL_PROXY: url, http_proxy: url, https_proxy: url, all_proxy: url },
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
