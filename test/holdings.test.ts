/**
 * Holdings (src/retention/holdings.ts), the owner of a response's buffers:
 * everything held is wiped at once, and a lent buffer's `onWiped` (which
 * gives it back to be read into again) waits both for the wipe and for every
 * step still using the bytes (`usedUntil`): a route that signs a PDF after
 * its client has left must not find another answer in its buffer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Holdings } from '../src/retention/holdings.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('Holdings', () => {
  it('wipes everything held at once, and anything held after that as it comes', () => {
    const holdings = new Holdings();
    const a = holdings.hold(Buffer.from('first'));
    const b = holdings.hold(Buffer.from('second'));
    holdings.wipe();
    assert.ok(a.every((byte) => byte === 0) && b.every((byte) => byte === 0));
    const late = holdings.hold(Buffer.from('late'));
    assert.ok(
      late.every((byte) => byte === 0),
      'held after the wipe: wiped at once',
    );
  });

  it('gives a lent buffer back once wiped, when nothing uses it', async () => {
    const holdings = new Holdings();
    let givenBack = false;
    const lent = holdings.hold(Buffer.from('lent'), () => (givenBack = true));
    holdings.wipe();
    assert.ok(lent.every((byte) => byte === 0));
    assert.equal(givenBack, true);
  });

  it('gives a lent buffer back only once the step using it has ended, though wiped before', async () => {
    for (const ending of ['resolves', 'rejects'] as const) {
      const holdings = new Holdings();
      let end!: () => void;
      const step = new Promise<void>((resolve, reject) => (end = ending === 'resolves' ? resolve : () => reject(new Error('x'))));
      step.catch(() => undefined);
      holdings.usedUntil(step);
      const order: string[] = [];
      holdings.hold(Buffer.from('lent'), () => order.push('given back'));
      holdings.wipe();
      await turn();
      assert.equal(order.length, 0, `wiped, but the step has not ended (${ending})`);
      order.push('step ended');
      end();
      await turn();
      assert.deepEqual(order, ['step ended', 'given back'], ending);
    }
  });

  it('a buffer held after the wipe is wiped at once, and given back once the step ends', async () => {
    const holdings = new Holdings();
    let end!: () => void;
    holdings.usedUntil(new Promise<void>((resolve) => (end = resolve)));
    holdings.wipe();
    let givenBack = false;
    const late = holdings.hold(Buffer.from('late result'), () => (givenBack = true));
    assert.ok(late.every((byte) => byte === 0));
    await turn();
    assert.equal(givenBack, false);
    end();
    await turn();
    assert.equal(givenBack, true);
  });
});
