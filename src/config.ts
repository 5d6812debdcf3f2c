/**
 * Every setting of the service, read from the environment in one place,
 * validated at start. A bad value stops the start with a message naming
 * the variable; nothing else in the code reads process.env.
 */
import { availableParallelism } from 'node:os';

export interface Config {
  /** TCP port of the API. */
  port: number;
  /** Interface the API listens on. */
  host: string;
  /** Number of Typst worker processes. */
  workers: number;
  /** Comma-separated API keys (plain or `sha256:<hex>`). */
  apiKeys: string | undefined;
  /** File with one API key entry per line. */
  apiKeysFile: string | undefined;
  /** Hard limit of one compile, in milliseconds (SPEC: 10 s). */
  compileTimeoutMs: number;
  /** Jobs allowed to wait for a worker before new ones get 503. */
  queueLimit: number;
  /** Longest a job may wait for a worker before it gets 503. */
  queueTimeoutMs: number;
  /** A worker is replaced after this many jobs (0: never). */
  workerMaxJobs: number;
  /** Resident memory one worker may hold, in MiB; past it the compile is stopped with 422 (0: no cap). */
  maxWorkerMemoryMb: number;
  /** Operator-provided directory of Typst packages (`<namespace>/<name>/<version>`). */
  packagePath: string | undefined;
  /** pino log level. */
  logLevel: string;
}

/** The request body limit of SPEC.md: 10 MB, counted as 10 × 1024 × 1024 bytes. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** The smallest worker memory cap accepted: an idle worker must fit well under it. */
export const MIN_WORKER_MEMORY_MB = 256;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(`${name} must be a whole number between ${min} and ${max}, got "${raw}"`);
  }
  const value = Number(raw.trim());
  if (value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

function text(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const workers = integer(env, 'WORKERS', availableParallelism(), 1, 256);
  const logLevel = text(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const packagePath = text(env, 'PACKAGE_PATH');
  if (packagePath !== undefined && !packagePath.startsWith('/')) {
    throw new ConfigError(`PACKAGE_PATH must be an absolute directory path, got "${packagePath}"`);
  }
  const maxWorkerMemoryMb = integer(env, 'MAX_WORKER_MEMORY_MB', 2048, 0, 1_048_576);
  if (maxWorkerMemoryMb !== 0 && maxWorkerMemoryMb < MIN_WORKER_MEMORY_MB) {
    // An idle worker (Node, the compiler and the fonts) already holds about 110 MiB.
    throw new ConfigError(`MAX_WORKER_MEMORY_MB must be 0 (no cap) or at least ${MIN_WORKER_MEMORY_MB}, got ${maxWorkerMemoryMb}`);
  }
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST') ?? '0.0.0.0',
    workers,
    apiKeys: text(env, 'API_KEYS'),
    apiKeysFile: text(env, 'API_KEYS_FILE'),
    compileTimeoutMs: integer(env, 'COMPILE_TIMEOUT_MS', 10_000, 100, 600_000),
    queueLimit: integer(env, 'QUEUE_LIMIT', workers * 4, 0, 100_000),
    queueTimeoutMs: integer(env, 'QUEUE_TIMEOUT_MS', 10_000, 1, 600_000),
    workerMaxJobs: integer(env, 'WORKER_MAX_JOBS', 1000, 0, 10_000_000),
    maxWorkerMemoryMb,
    packagePath,
    logLevel,
  };
}
