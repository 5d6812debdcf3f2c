/**
 * The log's output (src/log-output.ts), each case in a process of its own
 * whose fd 1 is a pipe this test reads, or does not (a FIFO read only once
 * the child has exited): every line in order
 * through a pipe that fills, with no further line needed to write the
 * rest; an exit that neither hangs on a reader that has gone nor waits
 * long for one that does not read; and lines dropped past its bound,
 * counted in a line of their own.
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const LOGGER = new URL('../src/logger.js', import.meta.url).href;

/**
 * A child logging through the service's logger to its fd 1, a non-blocking pipe (as process.stdout makes it): one
 * this test reads, or `stdoutFd`.
 */
function child(code: string, stdoutFd?: number) {
  const script = `const { createLogger } = await import(${JSON.stringify(LOGGER)});\nconst log = createLogger('info', false);\n${code}`;
  // Its stdout is null when fd 1 is stdoutFd: the test then reads that, not this.
  const process_ = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['pipe', stdoutFd ?? 'pipe', 'pipe'],
  }) as ChildProcessWithoutNullStreams;
  let stdout = '';
  process_.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  let stderr = '';
  process_.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { process: process_, stdout: () => stdout, stderr: () => stderr };
}

/** What the child's stderr said once it says `marker`. */
async function said(c: ReturnType<typeof child>, marker: string): Promise<void> {
  while (!c.stderr().includes(marker)) {
    if (c.process.exitCode !== null) throw new Error(`the child ended (${c.process.exitCode}) before "${marker}": ${c.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The `n` of each line, each parsed as JSON (a cut line fails). */
const numbers = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { n?: number; msg: string; dropped?: number });

/** All that a non-blocking descriptor holds, read to its end (no writer left). */
function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(64 * 1024);
  for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) chunks.push(Buffer.from(buffer.subarray(0, n)));
  return Buffer.concat(chunks).toString();
}

/** Waits for the child's exit, at most `ms`; kills it past that. Returns its code, or 'hung'. */
async function exitWithin(c: ReturnType<typeof child>, ms: number): Promise<number | null | 'hung'> {
  if (c.process.exitCode !== null) return c.process.exitCode;
  const timer = new Promise<'hung'>((r) => setTimeout(() => r('hung'), ms));
  const result = await Promise.race([once(c.process, 'exit').then(([code]) => code as number | null), timer]);
  if (result === 'hung') c.process.kill('SIGKILL');
  return result;
}

const LINES = 3000;

describe('log output', () => {
  it('writes every line, in order, through a pipe that fills, and the last ones with no line after them', async () => {
    const c = child(`
      for (let i = 0; i < ${LINES}; i++) log.info({ n: i, filler: 'x'.repeat(150) }, 'flood');
      setTimeout(() => process.stderr.write('checked\\n'), 1500);
      setTimeout(() => {}, 2000);
    `);
    // Nothing is read for 500 ms: the pipe's 64 KiB fill long before the 600 KB are written (partial writes, EAGAIN).
    c.process.stdout.pause();
    setTimeout(() => c.process.stdout.resume(), 500);
    await said(c, 'checked');
    const seen = numbers(c.stdout()).map((line) => line.n);
    assert.deepEqual(
      seen,
      Array.from({ length: LINES }, (_, i) => i),
      'all written by retries, 1 s before the exit',
    );
    assert.equal(await exitWithin(c, 5000), 0);
  });

  it('exits at once when whoever read its log has gone (EPIPE), with a line still in the batch', async () => {
    // The old writer (sonic-boom's exit flush) retried the failed write every 100 ms, for ever.
    const c = child(`
      log.info('first line');
      process.stdin.once('data', () => { log.info('last line'); process.exit(0); });
    `);
    while (!c.stdout().includes('first line')) await new Promise((r) => setTimeout(r, 20));
    c.process.stdout.destroy();
    c.process.stdin.write('go\n');
    assert.equal(await exitWithin(c, 5000), 0, c.stderr());
  });

  it('waits at most about a second at its exit for a reader that does not read, and cuts no line', async () => {
    // fd 1 is a FIFO that nothing reads until the child has exited: it fills, and stays full, however the machine schedules.
    const dir = mkdtempSync(join(tmpdir(), 'log-exit-'));
    const fifo = join(dir, 'log');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    try {
      const c = child(
        `
        for (let i = 0; i < ${LINES}; i++) log.info({ n: i, filler: 'x'.repeat(150) }, 'flood');
        process.stderr.write('exiting ' + Date.now() + '\\n');
        process.exit(0);
      `,
        writer,
      );
      closeSync(writer);
      await said(c, 'exiting');
      const exited = await exitWithin(c, 5000);
      const exitedAt = Date.now();
      const [, loggedAt] = /exiting (\d+)/.exec(c.stderr())!;
      assert.equal(exited, 0);
      assert.ok(exitedAt - Number(loggedAt) < 2500, `exited ${exitedAt - Number(loggedAt)} ms after its last line`);
      const seen = numbers(readAll(reader)).map((line) => line.n);
      assert.ok(seen.length > 0 && seen.length < LINES, `${seen.length} lines got out`);
      assert.deepEqual(
        seen,
        Array.from({ length: seen.length }, (_, i) => i),
        'a prefix, in order',
      );
    } finally {
      closeSync(reader);
      rmSync(dir, { recursive: true });
    }
  });

  it('drops lines past 16 MiB for a reader that does not keep up, and says how many', async () => {
    const total = 60_000; // 400-odd bytes each: about 25 MB
    const c = child(`
      for (let i = 0; i < ${total}; i++) log.info({ n: i, filler: 'x'.repeat(350) }, 'flood');
      process.stderr.write('logged\\n');
      process.stdin.once('data', () => log.info({ n: ${total} }, 'after'));
      setTimeout(() => {}, 4000);
    `);
    c.process.stdout.pause();
    await said(c, 'logged');
    c.process.stdout.resume();
    // Once the backlog is written, a line after it brings the count of those dropped.
    await new Promise((r) => setTimeout(r, 1500));
    c.process.stdin.write('go\n');
    while (!c.stdout().includes('"after"')) await new Promise((r) => setTimeout(r, 20));
    c.process.kill('SIGKILL');
    const lines = numbers(c.stdout());
    const notes = lines.filter((line) => line.dropped !== undefined);
    assert.equal(notes.length, 1, 'one note');
    const kept = lines.filter((line) => line.dropped === undefined).map((line) => line.n!);
    assert.equal(kept.at(-1), total, 'the line after the backlog is last');
    assert.ok(kept.length < total && kept.length > total / 2, `${kept.length} kept`);
    assert.equal(notes[0]!.dropped! + kept.length - 1, total, 'kept and dropped add up');
    assert.deepEqual(
      kept.slice(0, -1),
      Array.from({ length: kept.length - 1 }, (_, i) => i),
      'the first lines, in order',
    );
    assert.equal(lines.at(-2)!.dropped, notes[0]!.dropped, 'the note comes just before the line after the gap');
  });
});
