/**
 * The bound on bodies being received or checked (MAX_PENDING_BODIES_MB,
 * src/request/pending-bodies.ts): in total, and for each API key half of
 * it, so that one key cannot have every other refused. From outside, with
 * real connections: test/hostile/unfinished-requests.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KEY_SHARE } from '../src/request/bytes-by-key.js';
import { PendingBodies, type Room } from '../src/request/pending-bodies.js';

/** A room that was admitted, or the assertion fails. */
function admitted(room: Room | Error): Room {
  assert.ok(!(room instanceof Error), 'admitted');
  return room;
}

describe('the bodies pending, bounded', () => {
  const [a, b, c] = [{}, {}, {}];

  it('holds each key to its share and all of them to the bound', () => {
    assert.equal(KEY_SHARE, 0.5);
    const bodies = new PendingBodies(100);
    const first = admitted(bodies.admit({}, a, 40));
    assert.ok(bodies.admit({}, a, 20) instanceof Error, "past the key's share (60 of 50)");
    admitted(bodies.admit({}, b, 40));
    assert.ok(bodies.admit({}, b, 11) instanceof Error, "past the other key's share");
    assert.ok(bodies.admit({}, c, 21) instanceof Error, 'past the bound (101 of 100), though within the share');
    admitted(bodies.admit({}, c, 20));
    assert.equal(bodies.pendingBytes(), 100);
    first.release();
    admitted(bodies.admit({}, a, 30));
    assert.equal(bodies.pendingBytes(), 90);
  });

  it("lets a key's first body in as far as the bound allows, whatever its share", () => {
    const bodies = new PendingBodies(100);
    admitted(bodies.admit({}, a, 80));
    assert.ok(bodies.admit({}, a, 1) instanceof Error, 'its next is past the share');
    admitted(bodies.admit({}, b, 20));
    assert.ok(bodies.admit({}, c, 1) instanceof Error, 'past the bound');
  });

  it('holds a growing body to its share, and counts nothing it refused', () => {
    const bodies = new PendingBodies(100);
    const room = admitted(bodies.admit({}, a, 30));
    assert.ok(room.grow(20), 'to the share');
    assert.equal(room.grow(1), false, 'past it');
    assert.equal(bodies.pendingBytes(), 50);
    room.release();
    room.release();
    assert.equal(bodies.pendingBytes(), 0, 'released once, whatever the calls');
    admitted(bodies.admit({}, a, 50));
  });

  it('has no share without a bound', () => {
    const bodies = new PendingBodies(0);
    for (let i = 0; i < 5; i++) admitted(bodies.admit({}, a, 1_000_000));
    assert.equal(bodies.pendingBytes(), 5_000_000);
  });
});
