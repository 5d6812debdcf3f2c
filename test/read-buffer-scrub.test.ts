/**
 * The scrub of Node's read buffers (src/retention/read-buffer-scrub.ts) from outside:
 * after an answer, the server opens one connection of its own to its port,
 * and its closing asks for no further scrub; while a request is in flight it
 * waits for that answer, at most 1 s after the last one. Counted in the
 * kernel's table of TCP connections to the server's port (closed ones stay
 * there a minute, in TIME_WAIT), whatever address it listens on.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { generate, startService } from './support/service.js';

/** Connections (any state but listening) with the server's port at either end, IPv4 and IPv6. */
function connectionsOf(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  let count = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'latin1');
    } catch {
      continue; // no IPv6 on this host
    }
    for (const line of text.split('\n').slice(1)) {
      const [, local, remote, state] = line.trim().split(/\s+/);
      if (state === undefined || state === '0A') continue; // 0A: LISTEN
      if (local?.endsWith(`:${hex}`) || remote?.endsWith(`:${hex}`)) count++;
    }
  }
  return count;
}

const ipv6 = (() => {
  try {
    return readFileSync('/proc/net/if_inet6', 'latin1').includes('lo');
  } catch {
    return false;
  }
})();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the read buffer scrub', () => {
  for (const host of ['127.0.0.1', '0.0.0.0', ...(ipv6 ? ['::'] : [])]) {
    it(`opens one connection of its own after an answer, and no more, with HOST=${host}`, async () => {
      const service = await startService({ HOST: host });
      try {
        const port = Number(new URL(service.url).port);
        const res = await generate(service, { data: { a: 1 }, template: 'x #data.a' });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
        await sleep(500);
        const settled = connectionsOf(port);
        // The client's connection and the scrub's, open or waiting to close (TIME_WAIT lasts a minute).
        assert.ok(settled >= 1 && settled <= 6, `${settled} connections`);
        await sleep(1000);
        // A scrub whose own connection asked for another would open one every 100 ms.
        const later = connectionsOf(port);
        assert.ok(later <= settled, `${settled} connections, then ${later}`);
      } finally {
        await service.stop();
      }
    });
  }

  it('waits for a request in flight, at most 1 s after the last answer', async () => {
    const service = await startService();
    try {
      const port = Number(new URL(service.url).port);
      const first = await generate(service, { data: {}, template: 'first' });
      await first.arrayBuffer();
      // A compile of a few seconds: the next answer comes long after the scrub would have run.
      const slow = generate(service, { data: {}, template: '#{ let x = 0; for i in range(12000000) { x += 1 } }\nslow' });
      const sent = performance.now();
      // Long enough for the slow request's own connection to be counted in the base on a loaded machine (50 ms was not).
      await sleep(200);
      const base = connectionsOf(port);
      await sleep(400);
      assert.equal(connectionsOf(port), base, 'no scrub 600 ms after the answer while a compile runs');
      await sleep(700);
      const res = await slow;
      assert.ok(performance.now() - sent > 1300, 'the compile outlasted the wait (make its loop longer)');
      const bounded = connectionsOf(port);
      assert.ok(bounded > base, 'a scrub 1 s after the last answer, the compile still running');
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      // 100 ms after the answer when nothing is in flight; looked at for up to 2 s, as a loaded machine may run it late.
      let after = connectionsOf(port);
      for (let waited = 0; after <= bounded && waited < 2000; waited += 100) {
        await sleep(100);
        after = connectionsOf(port);
      }
      assert.ok(after > bounded, 'another after the slow answer');
    } finally {
      await service.stop();
    }
  });
});
