/**
 * Every setting of the service, read from the environment in one place,
 * validated at start. A bad value stops the start with a message naming
 * the variable; nothing else in the code reads process.env.
 */
import { statSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';

export interface Config {
  /** TCP port of the API. */
  port: number;
  /** Interface the API listens on. */
  host: string;
  /** Number of Typst worker processes. */
  workers: number;
  /** Started, idle workers kept to replace one that ends (crash, kill, recycle) without a cold start. */
  spareWorkers: number;
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
  fontPath: string | undefined;
  /** pino log level. */
  logLevel: string;
  /** Requests per window for a key without its own limit, and per client address without a key. */
  rateLimitPerMinute: number;
  /** Length of the fixed rate-limit window (one minute; shorter only for tests). */
  rateLimitWindowMs: number;
  /** Redis shared by all instances for the rate-limit counters; unset: counters in memory. */
  redisUrl: string | undefined;
  /** Proxies whose X-Forwarded-For is believed: false (none), true (any), or addresses, CIDRs and proxy-addr names. */
  trustProxy: boolean | string[];
  /** Port of a separate /metrics listener; undefined: /metrics is served on the API port. */
  metricsPort: number | undefined;
  /** Longest wait for in-flight requests on SIGTERM/SIGINT before workers are ended. */
  shutdownTimeoutMs: number;
  /** Serve the template playground at /playground (and redirect / there). */
  playground: boolean;
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

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function trustProxy(env: Env): boolean | string[] {
  const raw = text(env, 'TRUST_PROXY');
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (!(PROXY_NAMES.includes(entry) || (family !== 0 && validBits && extra === undefined))) {
      throw new ConfigError(
        `TRUST_PROXY must be true, false, or a comma-separated list of addresses, CIDR ranges or ${PROXY_NAMES.join('/')}, got "${entry}"`,
      );
    }
  }
  return entries;
}

function redisUrl(env: Env): string | undefined {
  const raw = text(env, 'REDIS_URL');
  if (raw !== undefined && !/^rediss?:\/\/[^\s]+$/.test(raw)) {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL');
  }
  return raw;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
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
  const fontPath = text(env, 'FONT_PATH');
  if (fontPath !== undefined && !(fontPath.startsWith('/') && isDirectory(fontPath))) {
    throw new ConfigError(`FONT_PATH must be an absolute path of a directory, got "${fontPath}"`);
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
    spareWorkers: integer(env, 'SPARE_WORKERS', 1, 0, 64),
    apiKeys: text(env, 'API_KEYS'),
    apiKeysFile: text(env, 'API_KEYS_FILE'),
    compileTimeoutMs: integer(env, 'COMPILE_TIMEOUT_MS', 10_000, 100, 600_000),
    queueLimit: integer(env, 'QUEUE_LIMIT', workers * 4, 0, 100_000),
    queueTimeoutMs: integer(env, 'QUEUE_TIMEOUT_MS', 10_000, 1, 600_000),
    workerMaxJobs: integer(env, 'WORKER_MAX_JOBS', 1000, 0, 10_000_000),
    maxWorkerMemoryMb,
    packagePath,
    fontPath,
    logLevel,
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 100, 1, 1_000_000),
    rateLimitWindowMs: integer(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 100, 3_600_000),
    redisUrl: redisUrl(env),
    trustProxy: trustProxy(env),
    metricsPort: text(env, 'METRICS_PORT') === undefined ? undefined : integer(env, 'METRICS_PORT', 0, 0, 65535),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 0, 600_000),
    playground: flag(env, 'PLAYGROUND', true),
  };
}

/** Every setting with its default and meaning, for `--help` (the README carries the same table). */
export const SETTINGS: ReadonlyArray<{ name: string; default: string; meaning: string; secret?: boolean }> = [
  { name: 'PORT', default: '3000', meaning: 'TCP port of the API' },
  { name: 'HOST', default: '0.0.0.0', meaning: 'Interface to listen on' },
  { name: 'API_KEYS', default: '(none)', meaning: 'Comma-separated keys (or sha256:<hex>)', secret: true },
  { name: 'API_KEYS_FILE', default: '(none)', meaning: 'File with one key entry per line' },
  { name: 'WORKERS', default: 'number of cores', meaning: 'Worker processes, one compile each at a time' },
  { name: 'SPARE_WORKERS', default: '1', meaning: 'Started, idle workers kept to replace one that ends, without a cold start' },
  { name: 'COMPILE_TIMEOUT_MS', default: '10000', meaning: 'Compile time limit; past it the worker is killed (422)' },
  { name: 'QUEUE_LIMIT', default: '4 x WORKERS', meaning: 'Requests that may wait for a worker; past it, 503' },
  { name: 'QUEUE_TIMEOUT_MS', default: '10000', meaning: 'Longest wait for a worker before 503' },
  { name: 'WORKER_MAX_JOBS', default: '1000', meaning: 'A worker is replaced after this many compiles (0: never)' },
  { name: 'PACKAGE_PATH', default: '(none)', meaning: 'Absolute directory of local Typst packages' },
  { name: 'FONT_PATH', default: '(none)', meaning: 'Absolute directory of extra .ttf/.otf/.ttc fonts, loaded by every worker' },
  { name: 'LOG_LEVEL', default: 'info', meaning: LOG_LEVELS.join(', ') },
  { name: 'RATE_LIMIT_PER_MINUTE', default: '100', meaning: 'Requests per window per key (unless its own limit=) and per address without a key' },
  { name: 'RATE_LIMIT_WINDOW_MS', default: '60000', meaning: 'Length of the fixed rate-limit window (change only for tests)' },
  { name: 'REDIS_URL', default: '(none)', meaning: 'Redis for rate-limit counters shared by all instances', secret: true },
  { name: 'TRUST_PROXY', default: 'false', meaning: 'Proxies whose X-Forwarded-For names the client' },
  { name: 'METRICS_PORT', default: '(API port)', meaning: 'Serve /metrics on this port instead of the API port' },
  { name: 'SHUTDOWN_TIMEOUT_MS', default: '25000', meaning: 'On SIGTERM/SIGINT, longest wait for in-flight requests' },
  { name: 'PLAYGROUND', default: 'true', meaning: 'Serve the template playground at /playground (false: off, 404)' },
];

/** The value each setting has in the environment, as text for display; secrets show only "(set)". */
export function settingValues(env: Env = process.env): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const setting of SETTINGS) {
    const raw = text(env, setting.name);
    values[setting.name] = raw === undefined ? undefined : setting.secret ? '(set)' : raw;
  }
  return values;
}
