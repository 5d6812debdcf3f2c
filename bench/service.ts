/**
 * Starts the real service (`node dist/src/main.js`) for the benchmark, on a
 * free loopback port, with a known key and a rate limit high enough never to
 * answer 429. Everything else is as configured by default.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
export const BENCH_KEY = 'bench-key-0123456789abcdef';

export interface BenchService {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startBenchService(workers: number): Promise<BenchService> {
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      API_KEYS: BENCH_KEY,
      WORKERS: String(workers),
      RATE_LIMIT_PER_MINUTE: '1000000',
    },
    // The request log (one line per request, as in production) is read and dropped.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    if (output.length < 64 * 1024) output += chunk.toString();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${output}`)), 60_000);
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      child.stdout!.off('data', collect);
      child.stdout!.resume();
      resolve(match[1]!);
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
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
