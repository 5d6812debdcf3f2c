/**
 * The log's batches (src/logger.ts): a line is written within a short wait
 * of being logged, also when it came while a batch was being written out,
 * which a flush asked for meanwhile leaves behind. Run in a process of its
 * own (the logger writes to fd 1) whose writes take 300 ms each, as on a
 * slow pipe, so that the flush comes while a write is going out.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';

const LOGGER = new URL('../src/logger.js', import.meta.url).href;

const CHILD = `
import fs from 'node:fs';
const write = fs.write;
fs.write = (...args) => {
  const done = args.pop();
  write(...args, (...result) => setTimeout(() => done(...result), 300));
};
const { createLogger } = await import(${JSON.stringify(LOGGER)});
const log = createLogger('info', false);
log.info('first line');
for (let i = 0; i < 40; i++) log.info({ filler: 'x'.repeat(100) }, 'burst');
log.info('line after the burst');
setTimeout(() => fs.writeSync(2, 'checked\\n'), 2000);
setTimeout(() => {}, 2500);
`;

/** A child that makes fd 1 non-blocking (as a pipe the server's stdout may be), then logs `LINES` lines at once. */
const LINES = 3000;
const FLOOD = `
import { Socket } from 'node:net';
new Socket({ fd: 1, readable: false, writable: true });
const { createLogger } = await import(${JSON.stringify(LOGGER)});
const log = createLogger('info', false);
for (let i = 0; i < ${LINES}; i++) log.info({ n: i, filler: 'x'.repeat(150) }, 'flood');
setTimeout(() => {}, 3000);
`;

describe('log batches', () => {
  it('keeps every line, in order, through a pipe that fills (partial writes and EAGAIN)', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', FLOOD], { stdio: ['ignore', 'pipe', 'inherit'] });
    // Nothing is read for 500 ms: the pipe's 64 KiB fill long before the 600 KB are written.
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), 500);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await once(child, 'exit');
    const numbers = stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { n: number }).n);
    assert.deepEqual(
      numbers,
      Array.from({ length: LINES }, (_, i) => i),
    );
  });

  it('writes a line that came while a batch was going out, without waiting for another line', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const seenAtCheck = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('checked')) resolve(stdout);
      });
      child.on('exit', (code) => reject(new Error(`the child ended (${code}) before its check: ${stdout}`)));
    });
    await new Promise((r) => child.once('exit', r));
    assert.match(seenAtCheck, /"msg":"first line"/);
    assert.equal(seenAtCheck.match(/"msg":"burst"/g)?.length, 40);
    assert.match(seenAtCheck, /"msg":"line after the burst"/, 'written 2 s after it was logged, while the process still ran');
  });
});
