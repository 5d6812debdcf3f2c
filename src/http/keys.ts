/**
 * API keys: where they come from and how a presented key is checked.
 *
 * Entries are kept only as SHA-256 digests, so a plain key given in the
 * environment is hashed at load and never held or logged as text. A check
 * hashes the presented key and compares it with every entry in constant time.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config.js';

export interface ApiKey {
  /** Name safe to log and to use as a metric label; never the key itself. */
  name: string;
  /** Requests per minute for this key; undefined means the service default. */
  limit: number | undefined;
  /** The key's rate-limit counter: part of its digest, never the key itself. */
  bucket: string;
}

/** A configured key: its digest, and what a check that matches it returns (made once, the same object for every request). */
interface Entry {
  digest: Buffer;
  key: ApiKey;
}

function entryOf(digest: Buffer, name: string, limit: number | undefined): Entry {
  return { digest, key: Object.freeze({ name, limit, bucket: `key:${digest.toString('hex', 0, 16)}` }) };
}

const HASHED = /^sha256:([0-9a-f]{64})$/i;
/** An entry that means to be a digest: one that is not 64 hex digits is refused, not taken as a key of that text. */
const MEANS_HASHED = /^sha256:/i;

function sha256(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}

/**
 * Parses one entry: `<key>` or `sha256:<hex>`, optionally followed by
 * `name=<name>` and `limit=<requests per minute>`, separated by spaces.
 */
function parseEntry(line: string, { index, name: defaultName }: { index: number; name: string }, source: string): Entry {
  const [secret, ...options] = line.split(/\s+/);
  if (!secret) throw new ConfigError(`${source}: entry ${index + 1} is empty`);
  const hashed = HASHED.exec(secret);
  if (!hashed && MEANS_HASHED.test(secret)) {
    throw new ConfigError(`${source}: entry ${index + 1} starts with sha256: but is not 64 hex digits (a SHA-256 digest)`);
  }
  let name = defaultName;
  let limit: number | undefined;
  for (const option of options) {
    const [key, value] = option.split('=', 2);
    if (key === 'name' && value && /^[\w.-]{1,64}$/.test(value)) name = value;
    else if (key === 'limit' && value && /^\d+$/.test(value) && Number(value) > 0) limit = Number(value);
    else
      throw new ConfigError(
        `${source}: entry ${index + 1} has an invalid option "${key}" (expected name=<word> or limit=<positive number>)`,
      );
  }
  return entryOf(hashed ? Buffer.from(hashed[1]!, 'hex') : sha256(secret), name, limit);
}

export class KeyStore {
  private constructor(private readonly entries: Entry[]) {}

  /**
   * Reads API_KEYS (comma-separated) and API_KEYS_FILE (one entry per line,
   * # comments). A source that is set but holds no key, or a key listed
   * twice, stops the start: either is a configuration gone wrong (an empty
   * Secret), which a generated key would hide behind 401s.
   */
  static load(apiKeys: string | undefined, apiKeysFile: string | undefined): KeyStore {
    const entries: Entry[] = [];
    const add = (lines: string[], source: string) => {
      if (lines.length === 0) throw new ConfigError(`${source} is set but holds no key`);
      // Messages count a source's own entries; default names count all of them, so that no two are alike.
      lines.forEach((line, index) => {
        entries.push(parseEntry(line, { index, name: `key-${entries.length + 1}` }, source));
      });
    };
    if (apiKeys !== undefined) {
      add(
        apiKeys
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        'API_KEYS',
      );
    }
    if (apiKeysFile !== undefined) {
      let text: string;
      try {
        text = readFileSync(apiKeysFile, 'utf8');
      } catch (error) {
        throw new ConfigError(`API_KEYS_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      add(
        text
          .split('\n')
          .map((s) => s.replace(/#.*$/, '').trim())
          .filter(Boolean),
        'API_KEYS_FILE',
      );
    }
    const seen = new Set<string>();
    for (const { digest, key } of entries) {
      if (seen.has(digest.toString('hex'))) throw new ConfigError(`API keys: the key named ${key.name} is listed more than once`);
      seen.add(digest.toString('hex'));
    }
    return new KeyStore(entries);
  }

  /** A store holding one freshly generated key, returned once so it can be shown to the operator. */
  static generate(): { store: KeyStore; key: string } {
    const key = `tps_${randomBytes(24).toString('base64url')}`;
    return { store: new KeyStore([entryOf(sha256(key), 'generated', undefined)]), key };
  }

  get size(): number {
    return this.entries.length;
  }

  /** The matching key, or undefined. Every entry is compared, so timing does not tell which matched. */
  verify(presented: string): ApiKey | undefined {
    const digest = sha256(presented);
    let found: Entry | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, digest) && !found) found = entry;
    }
    return found?.key;
  }
}
