/**
 * The garbage collections among the process metrics
 * (src/http/process-metrics.ts), in this process, with V8's real
 * collections: each one V8 reports is counted, also when it reports several
 * at once (as it does a quiet spell's young collection and the ones of the
 * whole heap after it). /metrics itself is checked from outside by
 * metrics.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { collectProcessMetrics } from '../src/http/process-metrics.js';
import { v8Collector } from '../src/retention/v8-collections.js';

const gc = v8Collector();

describe('the process metrics', () => {
  it('count every garbage collection V8 reports, also several reported at once', async () => {
    const registry = new Registry();
    collectProcessMetrics(registry, 'test_');
    // As /metrics writes it.
    const counted = async (kind: string) => {
      const line = (await registry.metrics())
        .split('\n')
        .find((l) => l.startsWith(`test_nodejs_gc_duration_seconds_count{kind="${kind}"} `));
      return Number(line?.split(' ')[1] ?? 0);
    };
    const before = { minor: await counted('minor'), major: await counted('major') };
    // Six collections in one turn: V8 reports them together, after it.
    for (let i = 0; i < 3; i++) {
      gc({ type: 'minor' });
      gc({ type: 'major' });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const after = { minor: await counted('minor'), major: await counted('major') };
    assert.ok(after.minor - before.minor >= 3, `young collections counted: ${JSON.stringify({ before, after })}`);
    assert.ok(after.major - before.major >= 3, `whole-heap collections counted: ${JSON.stringify({ before, after })}`);
  });
});
