/**
 * The worker pipe's frames (src/render/frames.ts), read the two ways the
 * service reads them: the server's FrameReader from chunks of any size, the
 * worker's `onread` reader a region at a time. With fast-check, against the
 * frames as written: every frame comes out whole and in order, whatever the
 * cut of the stream; and a frame whose receiver still holds it is never
 * written over by a later one, however long it is held, although each
 * reader lends one kept buffer to frame after frame (a frame given back is
 * wiped first, as the service does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type Frame, FrameReader, frameOnRead } from '../src/render/frames.js';
import { wipe } from '../src/retention/wipe.js';
import { runs } from './support/fuzz-scale.js';

/** A Done frame (type 3) with job id `id`: its bytes after the length are the type, the id, then `size` bytes of a pattern of `id`. */
function frameBytes(id: number, size: number): Buffer {
  const bytes = Buffer.alloc(4 + 5 + size);
  bytes.writeUInt32LE(5 + size, 0);
  bytes.writeUInt8(3, 4);
  bytes.writeUInt32LE(id, 5);
  bytes.fill(Buffer.from([id & 0xff, 1 + (id % 250), 0xa5]), 9);
  return bytes;
}

interface Plan {
  /** Payload size of each frame. */
  sizes: number[];
  /** How many later frames each frame is held for before it is given back (beyond the last: never). */
  holds: number[];
  /** Sizes of the pieces the stream is cut into (cycled; past MAX_PIECES pieces, 64 KiB each, to keep a run short). */
  cuts: number[];
}

const MAX_PIECES = 2000;
const pieceSize = (plan: Plan, index: number) => (index < MAX_PIECES ? plan.cuts[index % plan.cuts.length]! : 64 * 1024);

/** Payload sizes around both readers' thresholds: small, a few KB, and past 1 MiB (the worker's). */
const size = fc.oneof(
  fc.integer({ min: 0, max: 64 }),
  fc.integer({ min: 1000, max: 70_000 }),
  fc.integer({ min: 1024 * 1024 - 16, max: 1024 * 1024 + 4096 }),
);
const plan: fc.Arbitrary<Plan> = fc.integer({ min: 1, max: 8 }).chain((count) =>
  fc.record({
    sizes: fc.array(size, { minLength: count, maxLength: count }),
    holds: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: count, maxLength: count }),
    cuts: fc.array(fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 300_000 })), {
      minLength: 1,
      maxLength: 6,
    }),
  }),
);

/**
 * A receiver as the service's: it checks each frame against what was
 * written, holds it for its planned number of later frames, checks every
 * held frame again as each comes (and the caller at the end: a frame
 * written over stays so), then wipes it and gives it back.
 */
function receiver(plan: Plan, giveBack: (frame: Frame) => void) {
  const expected = plan.sizes.map((size, id) => frameBytes(id, size).subarray(4));
  const received: number[] = [];
  const held: { frame: Frame; until: number }[] = [];
  const checkHeld = () => {
    for (const { frame } of held) assert.ok(frame.bytes.equals(expected[frame.id]!), `frame ${frame.id} held intact`);
  };
  return {
    received,
    onFrame(frame: Frame): void {
      assert.equal(frame.id, received.length, 'frames in order');
      assert.ok(frame.bytes.equals(expected[frame.id]!), `frame ${frame.id} whole`);
      received.push(frame.id);
      checkHeld();
      held.push({ frame, until: frame.id + plan.holds[frame.id]! });
      for (let i = held.length - 1; i >= 0; i--) {
        if (held[i]!.until > frame.id) continue;
        const done = held.splice(i, 1)[0]!.frame;
        wipe(done.bytes);
        giveBack(done);
      }
    },
    checkHeld,
  };
}

function stream(plan: Plan): Buffer {
  return Buffer.concat(plan.sizes.map((size, id) => frameBytes(id, size)));
}

describe('worker pipe frames', () => {
  it("the server's reader: any cut of the stream, frames held for a while", () => {
    fc.assert(
      fc.property(plan, (plan) => {
        let reader: FrameReader | undefined;
        const frames = receiver(plan, (frame) => reader!.giveBack(frame));
        reader = new FrameReader(frames.onFrame);
        const bytes = stream(plan);
        for (let at = 0, cut = 0; at < bytes.length; cut++) {
          const piece = Buffer.from(bytes.subarray(at, at + pieceSize(plan, cut)));
          at += piece.length;
          reader.push(piece);
          // A chunk that is all of its ArrayBuffer (as Node reads a pipe) is freed too: its buffer is detached.
          const freed = piece.buffer instanceof ArrayBuffer && piece.buffer.detached;
          assert.ok(freed || piece.every((byte) => byte === 0), 'each chunk is wiped once copied');
        }
        frames.checkHeld();
        assert.deepEqual(
          frames.received,
          plan.sizes.map((_, id) => id),
        );
      }),
      { numRuns: runs(150) },
    );
  });

  it("the worker's reader: reads of any size into the region offered, frames held for a while", () => {
    fc.assert(
      fc.property(plan, (plan) => {
        let reader: ReturnType<typeof frameOnRead> | undefined;
        const frames = receiver(plan, (frame) => reader!.giveBack(frame));
        reader = frameOnRead(frames.onFrame);
        const bytes = stream(plan);
        for (let at = 0, cut = 0; at < bytes.length; cut++) {
          const region = reader.buffer();
          const n = Math.min(region.length, pieceSize(plan, cut), bytes.length - at);
          region.set(bytes.subarray(at, at + n));
          at += n;
          reader.callback(n);
        }
        frames.checkHeld();
        assert.deepEqual(
          frames.received,
          plan.sizes.map((_, id) => id),
        );
      }),
      { numRuns: runs(150) },
    );
  });

  it('a kept buffer is lent again once given back, and a frame read meanwhile gets one of its own', () => {
    const got: Frame[] = [];
    const reader = new FrameReader((frame) => got.push(frame));
    reader.push(frameBytes(0, 1000));
    reader.push(frameBytes(1, 800));
    assert.notEqual(got[1]!.bytes.buffer, got[0]!.bytes.buffer, 'the first frame is still held: the second has its own');
    wipe(got[0]!.bytes);
    reader.giveBack(got[0]!);
    reader.push(frameBytes(2, 900));
    assert.equal(got[2]!.bytes.buffer, got[0]!.bytes.buffer, 'given back: lent again');
  });
});
