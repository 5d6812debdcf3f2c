/**
 * The `assets` object's entries as the body check meets them: each name
 * checked (asset-names.ts), repeated names resolved last-wins, at most
 * MAX_ASSETS different names; then each final value checked (base64.ts),
 * and an image's declared pixel size held to the limit (image-size.ts).
 *
 * Every step is linear in the body, whatever its shape: a name is looked
 * at once when it arrives (unescaped into a scratch buffer only when it
 * holds an escape), repeated names are found through a hash of their bytes
 * (simple tabulation hashing with a random table made at start, so no
 * client can choose names that collide), and nothing is kept per entry but
 * the final ones. A body of millions of tiny repeated entries costs about as
 * much as one of a few long ones.
 */
import { randomFillSync } from 'node:crypto';
import { ASSET_NAME_PROBLEMS, ASSET_REFUSAL, ASSET_VALUE_PROBLEMS, tooManyAssets } from '../messages.js';
import { MAX_ASSET_NAME, nameProblem } from './asset-names.js';
import { Base64Reader, base64Problem, payloadStart } from './base64.js';
import { oversizedImage } from './image-size.js';
import type { AssetEntry, BodyError, Kind, Range } from './layout.js';
import { firstEscape, unescapeInto, withUnescaped } from './json-string.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';

export const MAX_ASSETS = 1000;

/**
 * A name's raw bytes beyond which it cannot be a valid name: an escape
 * stands for at least one byte in at most six (`\u0041`), so a longer name
 * unescapes to more than MAX_ASSET_NAME bytes.
 */
const SCRATCH_BYTES = 6 * MAX_ASSET_NAME + 6;

/** One random 32-bit word per (position, byte) of a valid name: at most MAX_ASSET_NAME bytes. */
const TABLE = new Int32Array(MAX_ASSET_NAME * 256);
randomFillSync(TABLE);

/** A hash of a name's bytes no client can aim at (also form-check.ts's, for a form's file names). */
export function hashOf(bytes: Uint8Array, from: number, to: number): number {
  let hash = 0;
  for (let i = from; i < to; i++) hash ^= TABLE[((i - from) << 8) | bytes[i]!]!;
  return hash;
}

const assetError = (name: Range, problem: string): BodyError => ({
  status: 400,
  before: ASSET_REFUSAL.beforeName,
  name,
  after: ASSET_REFUSAL.problem(problem),
});

export class AssetTable {
  /** The first fault found; entries after it are not looked at. */
  private fault: BodyError | undefined;
  private readonly entries: (AssetEntry & { kind: Kind })[] = [];
  /** The first entry of each hash, and the next entry of the same hash (-1: none). */
  private readonly firstOfHash = new Map<number, number>();
  private readonly nextOfHash: number[] = [];
  /** The names of `entries`, unescaped, one after another: entry k is `names[nameAt[k], nameAt[k + 1])`. */
  private names = ownedBuffer(0);
  private readonly nameAt: number[] = [0];
  private readonly scratch = ownedBuffer(SCRATCH_BYTES);

  constructor(private readonly body: Uint8Array) {}

  /** The next entry of the object: its name's and its value's raw bytes (a string value's without its quotes). */
  add(name: Range, value: Range, kind: Kind): void {
    if (this.fault) return;
    const { body } = this;
    const backslash = firstEscape(body, name.start, name.end);
    if (backslash >= 0 && name.end - name.start > SCRATCH_BYTES) {
      // Not a valid name: find out what is wrong in a copy of its own, once.
      const problem = withUnescaped(body, name, (bytes, from, to) => nameProblem(bytes, from, to));
      this.fault = assetError(name, problem ?? ASSET_NAME_PROBLEMS.invalid);
      return;
    }
    let bytes = body;
    let from = name.start;
    let to = name.end;
    if (backslash >= 0) {
      bytes = this.scratch;
      from = 0;
      to = unescapeInto(body, name.start, name.end, backslash, this.scratch);
    }
    const problem = nameProblem(bytes, from, to);
    if (problem) {
      this.fault = assetError(name, problem);
      return;
    }
    const hash = hashOf(bytes, from, to);
    for (let k = this.firstOfHash.get(hash) ?? -1; k >= 0; k = this.nextOfHash[k]!) {
      if (this.sameName(k, bytes, from, to)) {
        this.entries[k] = { name, value, kind };
        return;
      }
    }
    if (this.entries.length === MAX_ASSETS) {
      this.fault = { status: 400, message: tooManyAssets(MAX_ASSETS) };
      return;
    }
    this.keepName(bytes, from, to);
    this.nextOfHash.push(this.firstOfHash.get(hash) ?? -1);
    this.firstOfHash.set(hash, this.entries.length);
    this.entries.push({ name, value, kind });
  }

  /**
   * The assets, each name once with its last value, in order of first
   * appearance; or what is wrong with them: the first fault among the names,
   * else the first value that is not base64, or an image over `maxImagePixels`.
   */
  finish(maxImagePixels: number): BodyError | AssetEntry[] {
    try {
      if (this.fault) return this.fault;
      for (const { name, value, kind } of this.entries) {
        if (kind !== 'string') return assetError(name, ASSET_VALUE_PROBLEMS.notString);
        const problem = base64Problem(this.body, value);
        if (problem) return assetError(name, problem);
        const size = withUnescaped(this.body, value, (bytes, from, to) =>
          oversizedImage(new Base64Reader(bytes, payloadStart(bytes, from, to), to), maxImagePixels),
        );
        if (size) {
          return {
            status: 400,
            before: ASSET_REFUSAL.beforeName,
            name,
            after: ASSET_REFUSAL.imageTooLarge(size.width, size.height, maxImagePixels),
          };
        }
      }
      return this.entries.map(({ name, value }) => ({ name, value }));
    } finally {
      this.wipe();
    }
  }

  /** Zero-fills the names kept; finish() does it too. */
  wipe(): void {
    wipe(this.names, this.scratch);
  }

  private sameName(k: number, bytes: Uint8Array, from: number, to: number): boolean {
    const start = this.nameAt[k]!;
    if (this.nameAt[k + 1]! - start !== to - from) return false;
    for (let i = 0; i < to - from; i++) if (this.names[start + i] !== bytes[from + i]) return false;
    return true;
  }

  private keepName(bytes: Uint8Array, from: number, to: number): void {
    const at = this.nameAt[this.nameAt.length - 1]!;
    if (at + (to - from) > this.names.length) {
      const grown = ownedBuffer(Math.max(4096, this.names.length * 2, at + (to - from)));
      grown.set(this.names.subarray(0, at));
      wipe(this.names);
      this.names = grown;
    }
    this.names.set(bytes.subarray(from, to), at);
    this.nameAt.push(at + (to - from));
  }
}
