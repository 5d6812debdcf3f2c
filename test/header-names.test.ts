/**
 * Which requests name a header the server has not seen (retention/header-names.ts): those make the next quiet
 * spell collect the whole heap, so a name seen before, in any case, must not count, and a new one must.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeaderNames } from '../src/retention/header-names.js';

describe('header names seen', () => {
  it('counts a name as new once, whatever its case, and only names (not values)', () => {
    const names = new HeaderNames();
    assert.equal(names.anyNew(['Host', 'x', 'Authorization', 'Bearer k']), true);
    assert.equal(names.anyNew(['host', 'y', 'AUTHORIZATION', 'Bearer other']), false);
    assert.equal(names.anyNew(['host', 'x-new']), false, 'a value that looks like a name is not one');
    assert.equal(names.anyNew(['host', 'x', 'X-New', 'v']), true);
    assert.equal(names.anyNew(['x-new', 'v']), false);
    assert.equal(names.anyNew([]), false);
  });

  it('counts every unseen name as new once it has kept 1,024', () => {
    const names = new HeaderNames();
    for (let i = 0; i < 1024; i++) assert.equal(names.anyNew([`x-${i}`, 'v']), true);
    assert.equal(names.anyNew(['x-5', 'v']), false, 'a kept one is still seen');
    assert.equal(names.anyNew(['x-extra', 'v']), true);
    assert.equal(names.anyNew(['x-extra', 'v']), true, 'past the limit a new name is never kept');
  });
});
