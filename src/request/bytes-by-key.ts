/**
 * What one API key may hold of a bound the service keeps on memory held
 * for its clients (bodies being received, answers waiting for their
 * readers): KEY_SHARE of it. Else one key's connections, each within its
 * rate limit, could fill the bound and have every other client refused
 * (found by a hostile review for bodies: 26 idle connections declaring
 * 10 MB filled the default bound).
 */

/** The most of a bound one key's requests may hold. */
export const KEY_SHARE = 0.5;

/** Bytes held for each API key (the same object for every request of the key), for the keys that hold any. */
export class BytesByKey {
  private readonly held = new Map<object, number>();

  of(key: object): number {
    return this.held.get(key) ?? 0;
  }

  /** Counts `bytes` more for `key` (fewer, when negative). */
  add(key: object, bytes: number): void {
    const now = this.of(key) + bytes;
    if (now > 0) this.held.set(key, now);
    else this.held.delete(key);
  }
}
