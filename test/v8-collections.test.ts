/**
 * The count of V8's collections made during a call, which the worker's job
 * runner reads to know whether a job's asset names may have been moved to
 * the old generation (render/job-run.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countingCollections, v8Collector } from '../src/retention/v8-collections.js';

const collect = v8Collector();

describe('the collections counted during a call', () => {
  it('are those V8 made in it, young or of the whole heap, and the call’s value comes back', () => {
    const young = countingCollections(() => {
      collect({ type: 'minor' });
      return 'young';
    });
    // At least: V8 12 (Node 22) reports some collections in two parts.
    assert.equal(young.value, 'young');
    assert.ok(young.collections >= 1, `${young.collections} collections`);
    const both = countingCollections(() => {
      collect({ type: 'minor' });
      collect({ type: 'major' });
      return 2;
    });
    assert.equal(both.value, 2);
    assert.ok(both.collections >= 2, `${both.collections} collections`);
  });

  it('are none for a call that allocates nothing, right after a collection', () => {
    collect({ type: 'minor' });
    assert.deepEqual(
      countingCollections(() => 7),
      { value: 7, collections: 0 },
    );
  });

  it('let the error of a call that throws through, and start afresh with the next call', () => {
    assert.throws(
      () =>
        countingCollections(() => {
          collect({ type: 'major' });
          throw new Error('thrown');
        }),
      /thrown/,
    );
    collect({ type: 'minor' });
    assert.equal(countingCollections(() => 0).collections, 0);
  });
});
