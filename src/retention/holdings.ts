/**
 * The owner of a step's buffers: a job's run in the worker, a response in
 * the server (wipe-after-response.ts). Whoever makes or receives a buffer of
 * request content hands it over in one call, `hold(bytes)`, and goes on
 * using what it returns; the owner's end wipes everything held at once.
 * A lent buffer comes with `onWiped`, which gives it back once it holds zeros.
 */
import { wipe } from './wipe.js';

export class Holdings {
  private held: Uint8Array[] | undefined = [];
  private wiped: (() => void)[] = [];

  /** Holds `bytes` until wipe(); once wiped, anything held is wiped at once (and `onWiped` run). Returns `bytes`. */
  hold<T extends Uint8Array>(bytes: T, onWiped?: () => void): T {
    if (this.held) {
      this.held.push(bytes);
      if (onWiped) this.wiped.push(onWiped);
    } else {
      wipe(bytes);
      onWiped?.();
    }
    return bytes;
  }

  /** Zero-fills everything held; idempotent. */
  wipe(): void {
    const held = this.held;
    this.held = undefined;
    if (held) for (const bytes of held) wipe(bytes);
    const wiped = this.wiped;
    this.wiped = [];
    for (const onWiped of wiped) onWiped();
  }
}
