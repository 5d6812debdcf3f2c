/**
 * Where a body counts toward MAX_PENDING_BODIES_MB (src/request/receive.ts,
 * src/request/pending-bodies.ts): from the moment its receiver is admitted
 * until it is checked. A refused body stops counting at once; a whole one
 * counts until its caller releases it, which the body parser does once the
 * checking thread is done with it (src/http/body.ts): whole bodies queued
 * for the check hold their memory too.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { PendingBodies } from '../src/request/pending-bodies.js';

/** The API key the bodies are sent with. */
const KEY = {};
import { BodyIncompleteError, receiveBody } from '../src/request/receive.js';

describe('a body counted among the pending ones', () => {
  it('counts once whole, until its caller releases it; the next body past the bound is refused meanwhile', async () => {
    const bodies = new PendingBodies(100);
    const room = bodies.admit({}, KEY, 64);
    assert.ok(!(room instanceof Error));
    const body = await receiveBody(Readable.from([Buffer.alloc(40, 0x61), Buffer.alloc(24, 0x62)]), {
      declaredLength: 64,
      limit: 1000,
      idleMs: 1000,
      room,
    });
    assert.equal(body.length, 64);
    assert.equal(bodies.pendingBytes(), 64, 'a whole body still counts');
    assert.ok(bodies.admit({}, KEY, 64) instanceof Error, 'past the bound while the first waits for its check');
    room.release();
    assert.equal(bodies.pendingBytes(), 0);
    assert.ok(!(bodies.admit({}, KEY, 64) instanceof Error));
  });

  it('stops counting at once when it is refused', async () => {
    const bodies = new PendingBodies(100);
    const room = bodies.admit({}, KEY, 64);
    assert.ok(!(room instanceof Error));
    // Fewer bytes than declared: refused when the stream ends.
    const received = receiveBody(Readable.from([Buffer.alloc(10, 0x61)]), { declaredLength: 64, limit: 1000, idleMs: 1000, room });
    await assert.rejects(received, BodyIncompleteError);
    assert.equal(bodies.pendingBytes(), 0);
  });
});
