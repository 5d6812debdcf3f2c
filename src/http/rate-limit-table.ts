/**
 * What this instance knows of each rate-limit counter in its current window:
 * the whole count when counters live in memory, and, with Redis, the last
 * count Redis gave plus what was counted here since (the carry-over of an
 * outage, see rate-limit-counter.ts).
 *
 * Keys and client addresses are kept apart, so that no amount of other
 * traffic can evict a key's counter. Keys are a configured, finite set: their
 * table needs no bound. Client addresses are not (one host can send from
 * thousands of addresses, a trusted proxy forwards whatever it is sent), so
 * their table keeps at most a set number of entries: when it is full, the
 * address unseen for longest is forgotten. That can hand a fresh budget to
 * an address only, whose requests are all answered 401 anyway.
 */

export type SubjectKind = 'key' | 'address';

export interface Entry {
  /** Requests counted in this window: Redis's last count plus those counted here since. */
  count: number;
  /** Requests counted here that Redis has not been given yet. */
  unsent: number;
  /** Date.now() at which the window ends. */
  endsAt: number;
}

export class CounterTable {
  private readonly keys = new Map<string, Entry>();
  /** In order of last use, least recent first. */
  private readonly addresses = new Map<string, Entry>();

  constructor(
    private readonly windowMs: number,
    private readonly maxAddresses: number,
  ) {}

  /** The entry of `bucket` in its current window; a new one (count 0) if it had none or its window has ended. */
  entry(kind: SubjectKind, bucket: string, now: number): Entry {
    const table = kind === 'key' ? this.keys : this.addresses;
    let entry = table.get(bucket);
    if (kind === 'address') table.delete(bucket); // set again below: now the most recently used
    if (!entry || entry.endsAt <= now) entry = { count: 0, unsent: 0, endsAt: now + this.windowMs };
    table.set(bucket, entry);
    if (table.size > this.maxAddresses && kind === 'address') table.delete(table.keys().next().value!);
    return entry;
  }

  /** Every counter whose window is still open and that has counted something. */
  *live(now: number): Generator<[string, Entry]> {
    for (const table of [this.keys, this.addresses]) {
      for (const [bucket, entry] of table) {
        if (entry.endsAt <= now)
          table.delete(bucket); // deleting while iterating a Map is safe
        else if (entry.count > 0) yield [bucket, entry];
      }
    }
  }
}
