/**
 * wipeBodyChunk (src/retention/wipe.ts): a chunk a stream handed over is
 * zero-filled, and freed at once when it is the whole of its ArrayBuffer.
 * The service counts on Node giving every piece of an HTTP body a buffer of
 * its own: checked here on a real loopback connection, so that a Node.js
 * that stops doing so fails here rather than quietly bringing back the
 * collections those chunks started.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { wipeBodyChunk } from '../src/retention/wipe.js';

/** Whether a chunk is all of its own ArrayBuffer: what wipeBodyChunk frees. */
const ownsItsBuffer = (chunk: Uint8Array) => chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;

describe('wipeBodyChunk', () => {
  it('frees a chunk that is the whole of its buffer', () => {
    const chunk = Buffer.from(new Uint8Array(100_000).fill(7).buffer);
    wipeBodyChunk(chunk);
    assert.equal(chunk.buffer.detached, true);
    assert.equal(chunk.length, 0);
  });

  it('zero-fills a view of part of a buffer, and leaves the rest of it alone', () => {
    const whole = Buffer.alloc(300, 7);
    wipeBodyChunk(whole.subarray(100, 200));
    assert.equal(whole.buffer.detached, false);
    assert.ok(whole.subarray(100, 200).every((byte) => byte === 0));
    assert.ok(whole.subarray(0, 100).every((byte) => byte === 7));
    assert.ok(whole.subarray(200).every((byte) => byte === 7));
  });

  it('zero-fills shared memory, which cannot be freed', () => {
    const chunk = new Uint8Array(new SharedArrayBuffer(64)).fill(7);
    wipeBodyChunk(chunk);
    assert.ok(chunk.every((byte) => byte === 0));
  });

  it('leaves a chunk already freed as it is', () => {
    const chunk = Buffer.from(new ArrayBuffer(64));
    wipeBodyChunk(chunk);
    assert.doesNotThrow(() => wipeBodyChunk(chunk));
  });

  it('Node gives each piece of an HTTP body a buffer of its own, so a body is freed as it is received', async () => {
    let pieces = 0;
    const server = createHttpServer((request, response) => {
      request.on('data', (chunk: Buffer) => {
        pieces++;
        assert.ok(ownsItsBuffer(chunk), 'a piece of a body is the whole of its buffer');
        wipeBodyChunk(chunk);
        assert.equal((chunk.buffer as ArrayBuffer).detached, true);
      });
      request.on('end', () => response.end());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {
      method: 'POST',
      body: Buffer.alloc(1_000_000, 7),
    });
    await response.arrayBuffer();
    server.close();
    assert.ok(pieces > 1);
  });
});
