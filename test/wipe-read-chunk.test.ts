/**
 * wipeReadChunk (src/retention/wipe.ts): a chunk a stream handed over is
 * zero-filled, and freed at once when it is the whole of its ArrayBuffer.
 * The service counts on Node giving every piece of an HTTP body a buffer of
 * its own (with a length, chunked, after 100 Continue): checked here on real
 * loopback connections, so that a Node.js that stops doing so fails here
 * rather than quietly bringing back the collections those chunks started.
 * (A freed chunk cannot be read, so that it was zero-filled before it was
 * freed is the retention scan's to show, test/retention.test.ts.)
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { wipeReadChunk } from '../src/retention/wipe.js';

/** Whether a chunk is all of its own ArrayBuffer: what wipeReadChunk frees. */
const ownsItsBuffer = (chunk: Uint8Array) => chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;

describe('wipeReadChunk', () => {
  it('frees a chunk that is the whole of its buffer', () => {
    const chunk = Buffer.from(new Uint8Array(100_000).fill(7).buffer);
    wipeReadChunk(chunk);
    assert.equal(chunk.buffer.detached, true);
    assert.equal(chunk.length, 0);
  });

  it('zero-fills a view of part of a buffer, and leaves the rest of it alone', () => {
    const whole = Buffer.alloc(300, 7);
    wipeReadChunk(whole.subarray(100, 200));
    assert.equal(whole.buffer.detached, false);
    assert.ok(whole.subarray(100, 200).every((byte) => byte === 0));
    assert.ok(whole.subarray(0, 100).every((byte) => byte === 7));
    assert.ok(whole.subarray(200).every((byte) => byte === 7));
  });

  it('zero-fills shared memory, which cannot be freed', () => {
    const chunk = new Uint8Array(new SharedArrayBuffer(64)).fill(7);
    wipeReadChunk(chunk);
    assert.ok(chunk.every((byte) => byte === 0));
  });

  it('leaves a chunk already freed as it is', () => {
    const chunk = Buffer.from(new ArrayBuffer(64));
    wipeReadChunk(chunk);
    assert.doesNotThrow(() => wipeReadChunk(chunk));
  });

  /** Posts `send`'s body to a `node:http` server whose one 'data' listener checks and frees every piece; resolves with the count of pieces. */
  async function piecesFreed(send: (port: number) => Promise<void>): Promise<number> {
    let pieces = 0;
    const server = createHttpServer((request, response) => {
      request.on('data', (chunk: Buffer) => {
        pieces++;
        assert.ok(ownsItsBuffer(chunk), 'a piece of a body is the whole of its buffer');
        wipeReadChunk(chunk);
        assert.equal((chunk.buffer as ArrayBuffer).detached, true);
      });
      request.on('end', () => response.end());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      await send((server.address() as AddressInfo).port);
    } finally {
      server.close();
    }
    return pieces;
  }

  /** A POST through `node:http`, its body written in `pieces` pieces of `size` bytes once `ready` says so. */
  function post(port: number, headers: Record<string, string>, pieces: number, size: number, ready?: 'continue'): Promise<void> {
    return new Promise((resolve, reject) => {
      const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', headers }, (response) => {
        response.resume();
        response.on('end', resolve);
      });
      request.on('error', reject);
      const write = () => {
        for (let i = 0; i < pieces; i++) request.write(Buffer.alloc(size, 7));
        request.end();
      };
      if (ready) request.once(ready, write);
      else write();
    });
  }

  it('Node gives each piece of an HTTP body a buffer of its own, so a body is freed as it is received', async () => {
    const pieces = await piecesFreed(async (port) => {
      const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: Buffer.alloc(1_000_000, 7) });
      await response.arrayBuffer();
    });
    assert.ok(pieces > 1);
  });

  it('the same for a chunked body, and for one sent after 100 Continue', async () => {
    const chunked = await piecesFreed((port) => post(port, { 'transfer-encoding': 'chunked' }, 50, 20_000));
    assert.ok(chunked > 1);
    const length = String(20 * 50_000);
    const afterContinue = await piecesFreed((port) =>
      post(port, { 'content-length': length, expect: '100-continue' }, 20, 50_000, 'continue'),
    );
    assert.ok(afterContinue > 1);
  });
});
