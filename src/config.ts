/**
 * Every setting of the service, read from the environment in one place,
 * validated at start. A bad value stops the start with a message naming
 * the variable; nothing else in the code reads process.env.
 */
import { statSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { DEFAULT_ENGINE, ENGINE_IDS, ENGINE_VERSIONS, type EngineId, engineOf } from './engines.js';
import { DEFAULT_MAX_IMAGE_PIXELS, EINVOICE_PROFILES, type EinvoiceProfile } from './api-values.js';

/** One business-rule stylesheet of EINVOICE_RULES and the profiles it applies to (finish/business-rules.ts runs it). */
export interface RuleFile {
  path: string;
  profiles: EinvoiceProfile[];
}

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
  /** Hard limit of one compile, in milliseconds (10 s unless set). */
  compileTimeoutMs: number;
  /** Jobs allowed to wait for a worker before new ones get 503. */
  queueLimit: number;
  /** Longest a job may wait for a worker before it gets 503. */
  queueTimeoutMs: number;
  /** A worker is replaced after this many jobs (0: never). */
  workerMaxJobs: number;
  /** Resident memory one worker may hold, in MiB; past it the compile is stopped with 422 (0: no cap). */
  maxWorkerMemoryMb: number;
  /** Largest PDF answered; a larger one is 422. */
  maxPdfBytes: number;
  /** PDF answers held for clients that have not taken them yet, in total, and one key's at most half; past either, new compiles get 503 (0: no bound). */
  maxPendingAnswersMb: number;
  /** A PDF of at least this many bytes is written to its client by the worker that made it (0: every PDF by the server). */
  workerWritesPdfBytes: number;
  /** A client that takes no byte of its answer for this long is cut off. */
  readerStallTimeoutMs: number;
  /** A request body with no byte for this long is answered 408. */
  bodyTimeoutMs: number;
  /** Request bodies being received or checked, in total, and one key's at most half; past either, new bodies get 503 before they are read (0: no bound). */
  maxPendingBodiesMb: number;
  /** An image asset whose header declares more pixels is refused with 400 before any compile. */
  maxImagePixels: number;
  /** Operator-provided directory of Typst packages (`<namespace>/<name>/<version>`). */
  packagePath: string | undefined;
  /** Operator's directory of extra fonts, loaded by every worker. */
  fontPath: string | undefined;
  /** pino log level. */
  logLevel: string;
  /** Requests per window for a key without its own limit, and per client address without a key. */
  rateLimitPerMinute: number;
  /** Length of the fixed rate-limit window (one minute; shorter only for tests). */
  rateLimitWindowMs: number;
  /** Client addresses (of requests without a valid key) whose rate-limit counts are kept at once. */
  rateLimitAddresses: number;
  /** Engine crashes a key's requests may cause per rate-limit window; past it the key gets 429 until the window ends. */
  crashesPerMinute: number;
  /** Redis shared by all instances for the rate-limit counters; unset: counters in memory. */
  redisUrl: string | undefined;
  /** Longest wait for one Redis command before the instance counts on its own. */
  redisTimeoutMs: number;
  /** Proxies whose X-Forwarded-For is believed: false (none), true (any), or addresses, CIDRs and proxy-addr names. */
  trustProxy: boolean | string[];
  /** Port of a separate /metrics listener; undefined: /metrics is served on the API port. */
  metricsPort: number | undefined;
  /** Longest wait for in-flight requests on SIGTERM/SIGINT before workers are ended. */
  shutdownTimeoutMs: number;
  /** Serve the template playground at /playground (and redirect / there). */
  playground: boolean;
  /** The Typst engine of a request without a `typst` field. */
  defaultEngine: EngineId;
  /** The operator's e-invoice business-rule stylesheets (EINVOICE_RULES), with the profiles each applies to. */
  einvoiceRules: RuleFile[];
  /** PKCS#12 file of the identity that signs PDFs (`pdf.signature`); unset: no signing. */
  signingP12File: string | undefined;
  /** File holding the PKCS#12 file's password. */
  signingPasswordFile: string | undefined;
}

/** CRASHES_PER_MINUTE unless set. */
export const DEFAULT_CRASHES_PER_MINUTE = 5;

/** BODY_TIMEOUT_MS and READER_STALL_TIMEOUT_MS unless set. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
export const DEFAULT_READER_STALL_TIMEOUT_MS = 30_000;

/** The smallest worker memory cap accepted: an idle worker must fit well under it. */
const MIN_WORKER_MEMORY_MB = 256;

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

function trustProxy(env: Env, name: string): boolean | string[] {
  const raw = text(env, name);
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (!(PROXY_NAMES.includes(entry) || (family !== 0 && validBits && extra === undefined))) {
      throw new ConfigError(
        `${name} must be true, false, or a comma-separated list of addresses, CIDR ranges or ${PROXY_NAMES.join('/')}, got "${entry}"`,
      );
    }
  }
  return entries;
}

/** A redis:// or rediss:// URL that parses (a port past 65535 does not); the message never quotes it (it may hold a password). */
function redisUrl(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw !== undefined && (!/^rediss?:\/\/[^\s]+$/.test(raw) || !URL.canParse(raw))) {
    throw new ConfigError(`${name} must be a redis:// or rediss:// URL`);
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
const DEFAULT_LOG_LEVEL = 'info';
const DEFAULT_HOST = '0.0.0.0';
const DEFAULT_WORKER_MEMORY_MB = 2048;

/** One setting: its variable, the Config field it fills, its default and meaning as the README shows them, and its reader. */
interface Setting<K extends keyof Config = keyof Config> {
  name: string;
  key: K;
  /** Markdown, as in the README's table; for a whole number read by `whole()`, its default value unless given. */
  default?: string;
  /** Markdown, as in the README's table. */
  meaning: string;
  /** Reads and checks the variable `name`; `so` holds the settings read before it (QUEUE_LIMIT's default follows WORKERS). */
  read: ((env: Env, name: string, so: Partial<Config>) => Config[K]) & { defaultText?: string };
  /** Shown only as "(set)". */
  secret?: boolean;
}

/** A reader of a whole number between `min` and `max`, `fallback` when unset; the README shows the fallback as the default. */
const whole = (fallback: number, min: number, max: number) =>
  Object.assign((env: Env, name: string) => integer(env, name, fallback, min, max), { defaultText: `\`${fallback}\`` });

function maxWorkerMemory(env: Env, name: string): number {
  const value = integer(env, name, DEFAULT_WORKER_MEMORY_MB, 0, 1_048_576);
  if (value !== 0 && value < MIN_WORKER_MEMORY_MB) {
    // An idle worker (Node and the compiler) already holds tens of MiB, and a compile needs room.
    throw new ConfigError(`${name} must be 0 (no cap) or at least ${MIN_WORKER_MEMORY_MB}, got ${value}`);
  }
  return value;
}

function logLevel(env: Env, name: string): string {
  const value = text(env, name) ?? DEFAULT_LOG_LEVEL;
  if (!LOG_LEVELS.includes(value)) throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')}, got "${value}"`);
  return value;
}

function engine(env: Env, name: string): EngineId {
  const raw = text(env, name);
  if (raw === undefined) return DEFAULT_ENGINE;
  const id = engineOf(raw);
  if (!id) throw new ConfigError(`${name} must be one of ${ENGINE_IDS.join(', ')}, got "${raw}"`);
  return id;
}

function absolutePath(env: Env, name: string, what: string): string | undefined {
  const value = text(env, name);
  if (value !== undefined && !value.startsWith('/')) throw new ConfigError(`${name} must be ${what}, got "${value}"`);
  return value;
}

function directory(env: Env, name: string): string | undefined {
  const value = absolutePath(env, name, 'an absolute path of a directory');
  if (value !== undefined && !isDirectory(value)) throw new ConfigError(`${name} must be an absolute path of a directory, got "${value}"`);
  return value;
}

/** The profiles a rule file without a `PROFILE=` prefix applies to: those whose XML is EN 16931 compliant. */
const EN16931_PROFILES: EinvoiceProfile[] = ['BASIC', 'EN 16931', 'XRECHNUNG'];

/** EINVOICE_RULES: `path` (EN 16931's rules) or `PROFILE=path` entries, comma-separated, each an existing file. */
function einvoiceRules(env: Env, name: string): RuleFile[] {
  const value = text(env, name);
  if (value === undefined) return [];
  return value.split(',').map((entry) => {
    const at = entry.indexOf('=');
    const key = at < 0 ? undefined : entry.slice(0, at).trim();
    const path = (at < 0 ? entry : entry.slice(at + 1)).trim();
    const profile = key === undefined ? undefined : EINVOICE_PROFILES.find((p) => p.replace(' ', '') === key);
    if (key !== undefined && !profile) {
      throw new ConfigError(`${name}: "${key}" is not a profile (${EINVOICE_PROFILES.map((p) => p.replace(' ', '')).join(', ')})`);
    }
    let isFile = false;
    try {
      isFile = path.startsWith('/') && statSync(path).isFile();
    } catch {}
    if (!isFile) throw new ConfigError(`${name} must name absolute paths of XSLT files, got "${path}"`);
    return { path, profiles: profile ? [profile] : EN16931_PROFILES };
  });
}

/**
 * Every setting, in the order of `--help` and the README: the one table that
 * loading, `--help` and the README's table (checked by a test) come from.
 */
export const SETTINGS: readonly Setting[] = [
  { name: 'PORT', key: 'port', meaning: 'TCP port', read: whole(3000, 0, 65535) },
  {
    name: 'HOST',
    key: 'host',
    default: `\`${DEFAULT_HOST}\``,
    meaning: 'Interface to listen on',
    read: (env, name) => text(env, name) ?? DEFAULT_HOST,
  },
  {
    name: 'API_KEYS',
    key: 'apiKeys',
    default: '(none)',
    meaning: 'Comma-separated keys; an entry may be `sha256:<hex>` instead of the key itself',
    read: text,
    secret: true,
  },
  {
    name: 'API_KEYS_FILE',
    key: 'apiKeysFile',
    default: '(none)',
    meaning:
      'File of one key per line: the key or `sha256:<hex>`, then optionally `name=<word>` and `limit=<per minute>`; `#` starts a comment',
    read: text,
  },
  {
    name: 'WORKERS',
    key: 'workers',
    default: 'number of cores',
    meaning: 'Worker processes, each compiling one document at a time',
    read: whole(availableParallelism(), 1, 256),
  },
  {
    name: 'SPARE_WORKERS',
    key: 'spareWorkers',
    meaning: 'Started, idle workers kept to replace one that ends (crash, kill, recycle) without a cold start',
    read: whole(1, 0, 64),
  },
  {
    name: 'COMPILE_TIMEOUT_MS',
    key: 'compileTimeoutMs',
    meaning: 'Compile time limit; past it the worker is killed and the answer is 422',
    read: whole(10_000, 100, 600_000),
  },
  {
    name: 'QUEUE_LIMIT',
    key: 'queueLimit',
    default: '`4 × WORKERS`',
    meaning: 'Requests that may wait for a worker; past it, 503 at once',
    read: (env, name, so) => integer(env, name, so.workers! * 4, 0, 100_000),
  },
  {
    name: 'QUEUE_TIMEOUT_MS',
    key: 'queueTimeoutMs',
    meaning: 'Longest wait for a worker before 503',
    read: whole(10_000, 1, 600_000),
  },
  {
    name: 'WORKER_MAX_JOBS',
    key: 'workerMaxJobs',
    meaning:
      'A worker is replaced after this many compiles (0: never); sooner once the extra clean-up time a long document left, and the slower compiles that go with it, add up to what a new worker costs',
    read: whole(1000, 0, 10_000_000),
  },
  {
    name: 'MAX_WORKER_MEMORY_MB',
    key: 'maxWorkerMemoryMb',
    default: `\`${DEFAULT_WORKER_MEMORY_MB}\``,
    meaning:
      'Resident memory one worker may hold while compiling (at least 256, or 0 for no cap); past it the worker is killed and the answer is 422. Read from `/proc` while it compiles (Linux), every 50 to 250 ms: the further below the cap, the less often',
    read: maxWorkerMemory,
  },
  {
    name: 'MAX_PDF_BYTES',
    key: 'maxPdfBytes',
    default: '`104857600` (100 MiB)',
    meaning: 'Largest PDF answered; a template that makes a larger one gets 422',
    read: whole(100 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  },
  {
    name: 'MAX_PENDING_ANSWERS_MB',
    key: 'maxPendingAnswersMb',
    meaning:
      'PDF answers the server holds for clients that have not taken them yet, in total (MiB), and those of one API key at most half of it; past either, new compiles get 503 until readers catch up (0: no bound)',
    read: whole(512, 0, 1_048_576),
  },
  {
    name: 'WORKER_WRITES_PDF_BYTES',
    key: 'workerWritesPdfBytes',
    meaning:
      "A PDF of at least this many bytes is written to the client's connection by the worker that made it, not passed through the server (a signed PDF excepted): the server lends the worker the connection once it has written the answer's head. 0: the server sends every PDF",
    read: whole(512 * 1024, 0, 1024 * 1024 * 1024),
  },
  {
    name: 'READER_STALL_TIMEOUT_MS',
    key: 'readerStallTimeoutMs',
    meaning: 'A client that takes no byte of its answer for this long is cut off, and the answer wiped',
    read: whole(DEFAULT_READER_STALL_TIMEOUT_MS, 100, 600_000),
  },
  {
    name: 'BODY_TIMEOUT_MS',
    key: 'bodyTimeoutMs',
    meaning:
      'A request body with no byte for this long is answered 408 and what came of it wiped; a whole request (head and body) has twice this, so a client that sends a byte now and then is cut off too',
    read: whole(DEFAULT_BODY_TIMEOUT_MS, 100, 600_000),
  },
  {
    name: 'MAX_PENDING_BODIES_MB',
    key: 'maxPendingBodiesMb',
    meaning:
      'Request bodies being received or checked, in total (MiB, counted at their declared size), and those of one API key at most half of it; past either, a new body gets 503 with `Retry-After` before a byte of it is read (0: no bound)',
    read: whole(256, 0, 1_048_576),
  },
  {
    name: 'MAX_IMAGE_PIXELS',
    key: 'maxImagePixels',
    meaning:
      'An image asset (PNG, JPEG, GIF, WebP, told by its first bytes) whose header declares more pixels (width × height) is refused with 400 naming it, before any compile. SVG stays under the memory cap',
    read: whole(DEFAULT_MAX_IMAGE_PIXELS, 1, Number.MAX_SAFE_INTEGER),
  },
  {
    name: 'PACKAGE_PATH',
    key: 'packagePath',
    default: '(none)',
    meaning: 'Absolute path of a directory of Typst packages laid out as `<namespace>/<name>/<version>/` (e.g. `preview/cetz/0.2.2/`)',
    read: directory,
  },
  {
    name: 'FONT_PATH',
    key: 'fontPath',
    default: '(none)',
    meaning: 'Absolute path of a directory of extra `.ttf`/`.otf`/`.ttc` fonts, loaded by every worker and listed in `GET /v1/fonts`',
    read: directory,
  },
  {
    name: 'LOG_LEVEL',
    key: 'logLevel',
    default: `\`${DEFAULT_LOG_LEVEL}\``,
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
    read: logLevel,
  },
  {
    name: 'RATE_LIMIT_PER_MINUTE',
    key: 'rateLimitPerMinute',
    meaning: 'Requests per window for keys without their own `limit=`, and per client address without a key',
    read: whole(100, 1, 1_000_000),
  },
  {
    name: 'RATE_LIMIT_WINDOW_MS',
    key: 'rateLimitWindowMs',
    meaning: 'Length of the rate-limit window; change it only for tests',
    read: whole(60_000, 100, 3_600_000),
  },
  {
    name: 'RATE_LIMIT_ADDRESSES',
    key: 'rateLimitAddresses',
    meaning:
      'Client addresses (of requests without a valid key) whose counts are kept at once; past it, the address unseen for longest starts again from zero. Keys are counted apart and never forgotten',
    read: whole(10_000, 100, 10_000_000),
  },
  {
    name: 'CRASHES_PER_MINUTE',
    key: 'crashesPerMinute',
    meaning:
      "Requests of one key whose compile crashed the engine (500) per rate-limit window; past it the key's requests get 429 until the window ends. Counted by each instance for its own workers",
    read: whole(DEFAULT_CRASHES_PER_MINUTE, 1, 1_000_000),
  },
  {
    name: 'REDIS_URL',
    key: 'redisUrl',
    default: '(none)',
    meaning: '`redis://[:password@]host:port[/db]` (or `rediss://`): rate-limit counters shared by all instances',
    read: redisUrl,
    secret: true,
  },
  {
    name: 'REDIS_TIMEOUT_MS',
    key: 'redisTimeoutMs',
    meaning:
      'Longest wait for Redis; past it (or when its connection drops) the instance counts on its own from the counts Redis last gave, checks Redis every second, and gives it back what it counted when it answers',
    read: whole(300, 10, 60_000),
  },
  {
    name: 'TRUST_PROXY',
    key: 'trustProxy',
    default: '`false`',
    meaning:
      'Proxies whose `X-Forwarded-For` names the client: `true` (any), or comma-separated addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`',
    read: trustProxy,
  },
  {
    name: 'METRICS_PORT',
    key: 'metricsPort',
    default: '(the API port)',
    meaning: 'Serve `GET /metrics` on this port instead of the API port (`0`: any free port)',
    read: (env, name) => (text(env, name) === undefined ? undefined : integer(env, name, 0, 0, 65535)),
  },
  {
    name: 'SHUTDOWN_TIMEOUT_MS',
    key: 'shutdownTimeoutMs',
    meaning: 'On SIGTERM or SIGINT, longest wait for requests in flight before their compiles are cut off',
    read: whole(25_000, 0, 600_000),
  },
  {
    name: 'PLAYGROUND',
    key: 'playground',
    default: '`true`',
    meaning: 'Serve the template playground at `/playground` (and redirect `/` there); `false` turns both off (404)',
    read: (env, name) => flag(env, name, true),
  },
  {
    name: 'TYPST_VERSION',
    key: 'defaultEngine',
    default: `\`${DEFAULT_ENGINE}\``,
    meaning: `Typst engine of a request without a \`typst\` field: ${ENGINE_IDS.map((id) => `\`${id}\` (Typst ${ENGINE_VERSIONS[id]})`).join(' or ')}; every worker holds both, and a request picks one with \`"typst"\``,
    read: engine,
  },
  {
    name: 'EINVOICE_RULES',
    key: 'einvoiceRules',
    default: '(none)',
    meaning:
      "E-invoice business rules: comma-separated XSLT files that write SVRL (the official validation artefacts). A bare path applies to BASIC, EN 16931 and XRECHNUNG (EN 16931's CII rules); `PROFILE=path` to one profile (`XRECHNUNG=` for KoSIT's XRechnung rules; MINIMUM, BASICWL, BASIC, EN16931, EXTENDED, XRECHNUNG). Compiled once by each worker at its start",
    read: einvoiceRules,
  },
  {
    name: 'SIGNING_P12_FILE',
    key: 'signingP12File',
    default: '(none)',
    meaning:
      'PKCS#12 file (`.p12`) of the identity that signs PDFs a request asks to sign (`pdf.signature`): its private key and certificate chain, read at start; a broken file or a wrong password stops the start. Unset: a request for a signature gets 400',
    read: text,
  },
  {
    name: 'SIGNING_PASSWORD_FILE',
    key: 'signingPasswordFile',
    default: '(none)',
    meaning: "File holding the PKCS#12 file's password (one trailing line end ignored); needed with `SIGNING_P12_FILE`",
    read: (env, name, so) => {
      const value = text(env, name);
      if ((value === undefined) !== (so.signingP12File === undefined)) {
        throw new ConfigError(`SIGNING_P12_FILE and ${name} must be set together`);
      }
      return value;
    },
  },
] as Setting[];

export function loadConfig(env: Env = process.env): Config {
  const config: Partial<Config> = {};
  for (const setting of SETTINGS) (config as Record<string, unknown>)[setting.key] = setting.read(env, setting.name, config);
  return config as Config;
}

/** A setting's default as the README and `--help` show it (Markdown). */
export function defaultText(setting: Setting): string {
  return setting.default ?? setting.read.defaultText ?? '(none)';
}

/** The README's settings table, as Markdown rows. */
export function settingsTable(): string {
  return [
    '| Variable | Default | Meaning |',
    '| --- | --- | --- |',
    ...SETTINGS.map((s) => `| \`${s.name}\` | ${defaultText(s)} | ${s.meaning} |`),
  ].join('\n');
}

/** The value each setting has in the environment, as text for display; secrets show only "(set)". */
export function settingValues(env: Env = process.env): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const setting of SETTINGS) {
    const raw = text(env, setting.name);
    values[setting.name] = raw === undefined ? undefined : setting.secret ? '(set)' : raw;
  }
  return values;
}
