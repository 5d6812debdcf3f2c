/**
 * The JSON scanner's optimized code outlives a full collection with no
 * scanner of a request alive (src/bytes/json-scanner.ts keeps one over no
 * request's bytes): the server runs such a collection whenever it goes
 * quiet, and without the kept scanner V8 threw the code away each time, to
 * compile it again on the next request. Run in a process of its own, with
 * V8's natives syntax to ask for the compile and read the code's state.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';

const SCANNER = new URL('../src/bytes/json-scanner.js', import.meta.url).href;

/** V8's optimization status bits (runtime-test.cc): optimized at all, and by TurboFan. */
const OPTIMIZED = 16;
const TURBOFANNED = 64;

const CHILD = `
const { JsonScanner } = await import(${JSON.stringify(SCANNER)});
const body = Buffer.from(JSON.stringify({ data: { name: 'x'.repeat(100), rows: [{ a: 1, b: 'two' }, { a: 3, b: 'four' }] }, template: '= Hello' }));
const fastSkip = JsonScanner.prototype.fastSkip;
// Each check on a body of its own, as the server's: no scanner of it is alive once it returns.
const check = () => { const bytes = Buffer.from(new ArrayBuffer(body.length)); body.copy(bytes); new JsonScanner(bytes).skipValue(0); };
%PrepareFunctionForOptimization(fastSkip);
check();
check();
%OptimizeFunctionOnNextCall(fastSkip);
check();
const before = %GetOptimizationStatus(fastSkip);
// Off the stack of the checks, as the server's collection is.
await new Promise((resolve) => setTimeout(resolve, 10));
gc({ type: 'major' });
console.log(JSON.stringify({ before, after: %GetOptimizationStatus(fastSkip) }));
`;

describe('the JSON scanner after a full collection', () => {
  it('keeps its optimized code when no scanner of a request is alive', () => {
    const output = execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--input-type=module', '-e', CHILD], {
      encoding: 'utf8',
    });
    const { before, after } = JSON.parse(output) as { before: number; after: number };
    assert.equal(
      before & (OPTIMIZED | TURBOFANNED),
      OPTIMIZED | TURBOFANNED,
      `optimized by TurboFan before (status ${before.toString(2)})`,
    );
    assert.equal(after & (OPTIMIZED | TURBOFANNED), OPTIMIZED | TURBOFANNED, `still optimized after (status ${after.toString(2)})`);
  });
});
