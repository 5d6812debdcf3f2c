/**
 * Which requests name a header the server has not seen before. Node makes
 * every header name it does not know itself a property key, which V8 keeps
 * as an internalized string, allocated in the old generation from the
 * start: the heap scrub's collection of the young generation never frees
 * it (heap-scrub.ts). A request that names a new header so has the next
 * quiet spell collect the whole heap. Names seen before (a client's or a
 * proxy's own, the same on every request) do not, so that a proxy's headers
 * do not make every quiet spell collect the whole heap.
 *
 * Only a 32-bit hash of each name is kept (FNV-1a of its lower case), never
 * the name: a name whose hash was seen counts as seen. At most MAX_NAMES are
 * kept; past them, every name not among them counts as new.
 */
const MAX_NAMES = 1024;

export class HeaderNames {
  private readonly seen = new Set<number>();

  /** Whether `raw` (Node's rawHeaders: name, value, name, ...) names a header not seen before. */
  anyNew(raw: string[]): boolean {
    let found = false;
    for (let i = 0; i < raw.length; i += 2) {
      const hash = lowerCaseHash(raw[i]!);
      if (this.seen.has(hash)) continue;
      found = true;
      if (this.seen.size < MAX_NAMES) this.seen.add(hash);
    }
    return found;
  }
}

/** FNV-1a over the name's characters in lower case (a header name is ASCII). */
function lowerCaseHash(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    let c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    hash = Math.imul(hash ^ c, 0x01000193);
  }
  return hash >>> 0;
}
