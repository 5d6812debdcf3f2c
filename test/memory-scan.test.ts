/**
 * The retention tests' memory scan (test/support/memory-scan.ts) reads only
 * the pages of anonymous memory that are resident or swapped out. Checked
 * here against reading every page (zeros included): in a child process that
 * holds random needles in a large buffer and nowhere else, some with zeros
 * before or after them that lie in pages never touched, both ways find the
 * same places, and every needle once.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { describeHit, scanMemory } from './support/memory-scan.js';
import { runs } from './support/fuzz-scale.js';

interface Placement {
  /** Where the random bytes lie in a page of their own: from its first byte, up to its last, or inside. */
  edge: 'start' | 'end' | 'inside';
  /** From the page's start, for `inside`. */
  offset: number;
  /** Random bytes written. */
  length: number;
  /** Zeros that belong to the needle but are not written: the memory's own, in the page before or after, never touched. */
  zerosBefore: number;
  zerosAfter: number;
}

/**
 * Reads placements as JSON on stdin and puts each needle's random bytes in
 * a 32 MiB buffer (glibc maps it on its own: it starts 16 bytes into a
 * page, which the test checks with the first needle), the i-th in page
 * 2 + 3i, so that the pages either side are never touched. The bytes come
 * from Math.random one at a time (crypto's generator leaves copies of what
 * it makes on the heap). Prints each needle (zeros included) as hex, and
 * waits.
 */
const CHILD = `
let input = '';
process.stdin.on('data', (c) => (input += c));
process.stdin.on('end', () => {
  const region = Buffer.allocUnsafeSlow(32 * 1024 * 1024);
  const pageStart = (k) => k * 4096 - 16;
  const fill = (at, length) => {
    for (let i = 0; i < length; i++) region[at + i] = Math.floor(Math.random() * 256);
    return region.subarray(at, at + length).toString('hex');
  };
  const needles = [fill(0, 16)];
  JSON.parse(input).forEach((p, i) => {
    const page = 2 + 3 * i;
    const at = p.edge === 'start' ? pageStart(page) : p.edge === 'end' ? pageStart(page + 1) - p.length : pageStart(page) + 64 + p.offset;
    needles.push('00'.repeat(p.zerosBefore) + fill(at, p.length) + '00'.repeat(p.zerosAfter));
  });
  globalThis.kept = region;
  process.stdout.write(JSON.stringify(needles) + '\\n');
  setInterval(() => undefined, 1000);
});
`;

const placement = fc.record({
  edge: fc.constantFrom('start' as const, 'end' as const, 'inside' as const),
  offset: fc.integer({ min: 0, max: 3900 }),
  length: fc.integer({ min: 8, max: 40 }),
  zerosBefore: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 24 })),
  zerosAfter: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 24 })),
});

async function needlesHeldBy(placements: Placement[]): Promise<{ pid: number; needles: Buffer[]; end: () => void }> {
  const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(JSON.stringify(placements));
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (output += chunk));
  while (!output.includes('\n')) await once(child.stdout, 'data');
  const needles = (JSON.parse(output) as string[]).map((hex) => Buffer.from(hex, 'hex'));
  return { pid: child.pid!, needles, end: () => child.kill('SIGKILL') };
}

const placesOf = (hits: ReturnType<typeof scanMemory>) => hits.map((hit) => `${hit.needle}@${hit.address.toString(16)}`).sort();

describe('the memory scan', () => {
  it('finds, reading resident and swapped pages only, what a read of every page finds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(placement, { minLength: 1, maxLength: 40 }), async (placements) => {
        const child = await needlesHeldBy(placements);
        try {
          const resident = scanMemory(child.pid, child.needles);
          const every = scanMemory(child.pid, child.needles, { everyPage: true });
          assert.deepEqual(placesOf(resident), placesOf(every));
          const first = resident.find((hit) => hit.needle === 0);
          assert.equal(first && first.address % 4096, 16, 'the buffer starts 16 bytes into a page');
          // Each needle is where it was put, once: its bytes came from nowhere else.
          for (const index of child.needles.keys()) {
            const found = resident.filter((hit) => hit.needle === index);
            assert.equal(found.length, 1, `needle ${index}: ${found.map(describeHit).join('; ')}`);
          }
        } finally {
          child.end();
        }
      }),
      { numRuns: runs(4) },
    );
  });
});
