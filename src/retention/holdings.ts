/**
 * The owner of a step's buffers: a job's run in the worker, a response in
 * the server (wipe-after-response.ts). Whoever makes or receives a buffer of
 * request content hands it over in one call, `hold(bytes)`, and goes on
 * using what it returns; the owner's end wipes everything held at once.
 * A lent buffer comes with `onWiped`, which gives it back once it holds
 * zeros and no step that uses it is still running (`usedUntil`).
 */
import { wipe } from './wipe.js';

export class Holdings {
  private held: Uint8Array[] | undefined = [];
  private wiped: (() => void)[] = [];
  private readonly users: Promise<unknown>[] = [];

  /** Holds `bytes` until wipe(); once wiped, anything held is wiped at once (and `onWiped` run). Returns `bytes`. */
  hold<T extends Uint8Array>(bytes: T, onWiped?: () => void): T {
    if (this.held) {
      this.held.push(bytes);
      if (onWiped) this.wiped.push(onWiped);
    } else {
      wipe(bytes);
      if (onWiped) this.afterUsers(onWiped);
    }
    return bytes;
  }

  /**
   * A step that may read or write what is held until `ended` settles (a
   * route's handler, which can outlive its response): `onWiped` waits for it.
   */
  usedUntil(ended: Promise<unknown>): void {
    this.users.push(ended);
  }

  /** Zero-fills everything held; idempotent. */
  wipe(): void {
    const held = this.held;
    this.held = undefined;
    if (held) for (const bytes of held) wipe(bytes);
    const wiped = this.wiped;
    this.wiped = [];
    for (const onWiped of wiped) this.afterUsers(onWiped);
  }

  private afterUsers(onWiped: () => void): void {
    if (this.users.length === 0) onWiped();
    else void Promise.allSettled(this.users).then(onWiped);
  }
}
