/**
 * Bodies being received, bounded in total like answers held for readers
 * are: a body's buffer is taken when its first byte is about to be read,
 * so a thousand clients that each declare 10 MB and send slowly would
 * otherwise hold 10 GB. A whole body counts until it is checked (large
 * ones wait for the one checking thread). Past MAX_PENDING_BODIES_MB a
 * new body is refused (503 with Retry-After) before a byte of it is read.
 *
 * One API key's bodies may take at most half of it (bytes-by-key.ts): a
 * key with no body pending is let in as far as the bound allows.
 *
 * Each body being received has a Room: the bytes counted for it, and a way
 * to stop its receiver from outside: when the connection's framing breaks
 * (http/client-errors.ts) or the service shuts down (only whole bodies are
 * waited for).
 */
import { BytesByKey, KEY_SHARE } from './bytes-by-key.js';

export class Room {
  private stopper: ((error: Error) => void) | undefined;

  constructor(
    private readonly bodies: PendingBodies,
    private readonly request: object,
    /** The API key the body is sent with. */
    readonly key: object,
    private bytes: number,
  ) {}

  /** Counts `more` bytes for this body; false past the bound or its key's share (nothing counted then). */
  grow(more: number): boolean {
    if (!this.bodies.take(this.key, more)) return false;
    this.bytes += more;
    return true;
  }

  /** Sets how the receiver is stopped from outside (it wipes what came and releases the room). */
  onStop(stopper: (error: Error) => void): void {
    this.stopper = stopper;
  }

  /** @internal PendingBodies.stop */
  stop(error: Error): void {
    this.stopper?.(error);
  }

  /** The body is whole or refused: its bytes no longer count. Safe to call twice. */
  release(): void {
    this.bodies.give(this.request, this, this.bytes);
    this.bytes = 0;
  }
}

/** The body was refused before it was read: past the bound or its key's share, or stopped before its receiver started. */
export class BodyRefusedError extends Error {
  override name = 'BodyRefusedError';
}

export class PendingBodies {
  private held = 0;
  private readonly heldByKey = new BytesByKey();
  /** The room of each request whose body is being received, or why its body can no longer be received. */
  private readonly rooms = new WeakMap<object, Room | Error>();
  private readonly receiving = new Set<Room>();

  /** `maxBytes`: the bound on all bodies being received (0: no bound). */
  constructor(private readonly maxBytes: number) {}

  /**
   * Room for `request`'s body of `bytes`, sent with `key` (the API key, the
   * same object for each of its requests): an Error instead when the bound
   * or the key's share is reached (BodyRefusedError) or the body was stopped
   * before this (see stop). One body is always let in, whatever its size,
   * and a key's first body as far as the bound allows.
   */
  admit(request: object, key: object, bytes: number): Room | Error {
    const stopped = this.rooms.get(request);
    if (stopped instanceof Error) {
      this.rooms.delete(request);
      return stopped;
    }
    if (!this.take(key, bytes)) return new BodyRefusedError();
    const room = new Room(this, request, key, bytes);
    this.rooms.set(request, room);
    this.receiving.add(room);
    return room;
  }

  /**
   * Stops `request`'s body with `error`: its receiver, if one runs, or the
   * receiver to come (admit returns the error), for a request still in its
   * first steps.
   */
  stop(request: object, error: Error): void {
    const room = this.rooms.get(request);
    if (room instanceof Room) room.stop(error);
    else this.rooms.set(request, error);
  }

  /** Stops every body being received (shutdown). */
  stopAll(error: Error): void {
    for (const room of [...this.receiving]) room.stop(error);
  }

  /** Bytes of bodies being received now. */
  pendingBytes(): number {
    return this.held;
  }

  /** @internal Room.grow and admit. */
  take(key: object, bytes: number): boolean {
    const keyHeld = this.heldByKey.of(key);
    if (this.maxBytes > 0) {
      if (this.held > 0 && this.held + bytes > this.maxBytes) return false;
      if (keyHeld > 0 && keyHeld + bytes > this.maxBytes * KEY_SHARE) return false;
    }
    this.held += bytes;
    this.heldByKey.add(key, bytes);
    return true;
  }

  /** @internal Room.release. */
  give(request: object, room: Room, bytes: number): void {
    this.held -= bytes;
    this.heldByKey.add(room.key, -bytes);
    this.receiving.delete(room);
    if (this.rooms.get(request) === room) this.rooms.delete(request);
  }
}
