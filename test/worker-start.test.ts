/**
 * A worker's start: its command line holds only Node's flags and the
 * script, its options (the font catalogue with them) come over the IPC
 * channel, and a worker that gets none ends instead of waiting for ever.
 * A worker ends with its server, even mid-compile, whether the kernel ends
 * it (started by setpriv) or a thread of its own does (no setpriv on the PATH).
 */
import assert from 'node:assert/strict';
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { KILLED_WITH_PARENT } from '../src/render/parent-death.js';
import { WORKER_NODE_FLAGS } from '../src/render/pool.js';
import { generate, startService } from './support/service.js';

const WORKER = fileURLToPath(new URL('../src/render/worker.js', import.meta.url));

function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
}

/** A worker forked as the pool forks one, but sent nothing. */
function forkBare(): ChildProcess {
  return fork(WORKER, [], { execArgv: [], stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'ipc'] });
}

describe('worker start', () => {
  it('shows only Node flags and the script on the command line, and gets the font catalogue over IPC', async () => {
    const service = await startService({ WORKERS: '1', SPARE_WORKERS: '1' });
    try {
      const pids = service.workerPids();
      assert.equal(pids.length, 2);
      // Started by setpriv (on this machine's PATH, as in the image), which the worker's argument says.
      for (const pid of pids) {
        assert.deepEqual(commandLine(pid).slice(1), [...WORKER_NODE_FLAGS, WORKER, KILLED_WITH_PARENT]);
      }
      // A bundled family compiles without an unknown-font warning: the catalogue reached the worker.
      const res = await generate(service, { data: {}, template: '#set text(font: "Arial", fallback: false)\nSans' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-typst-warnings'), null);
      await res.arrayBuffer();
    } finally {
      await service.stop();
    }
  });

  it('ends at once when its server disconnects before sending the options', async () => {
    const child = forkBare();
    const started = Date.now();
    child.disconnect();
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 2000, `ended after ${Date.now() - started} ms`);
  });

  it('reports fatal and exits 1 when no options come within 10 s', async () => {
    const child = forkBare();
    const started = Date.now();
    const messages: unknown[] = [];
    child.on('message', (message) => messages.push(message));
    const [code] = await once(child, 'exit');
    const elapsed = Date.now() - started;
    assert.equal(code, 1);
    assert.deepEqual(messages, [{ type: 'fatal', message: 'Typst worker received no options from the server' }]);
    assert.ok(elapsed >= 9_900 && elapsed < 13_000, `ended after ${elapsed} ms`);
  });

  for (const how of ['the kernel (setpriv)', 'its own thread (no setpriv on the PATH)', 'its own thread (a setpriv that fails)'] as const) {
    it(`ends with its server killed mid-compile: ${how}`, async (t) => {
      let path = process.env.PATH ?? '';
      if (!how.startsWith('the kernel')) {
        // A PATH of Node's directory and one with the server's prlimit, and a setpriv that fails or none.
        const bin = mkdtempSync(join(tmpdir(), 'typst-pdf-path-'));
        t.after(() => rmSync(bin, { recursive: true, force: true }));
        symlinkSync(execFileSync('sh', ['-c', 'command -v prlimit'], { encoding: 'utf8' }).trim(), join(bin, 'prlimit'));
        if (how.includes('fails')) writeFileSync(join(bin, 'setpriv'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
        path = `${bin}${delimiter}${dirname(process.execPath)}`;
        assert.equal(existsSync(join(dirname(process.execPath), 'setpriv')), false);
      }
      const service = await startService({ PATH: path, WORKERS: '1', COMPILE_TIMEOUT_MS: '60000' });
      const [worker] = service.workerPids();
      assert.ok(worker);
      t.after(() => {
        if (existsSync(`/proc/${worker}`)) process.kill(worker, 'SIGKILL'); // a worker this test failed to see end
      });
      const setprivStarted = commandLine(worker).includes(KILLED_WITH_PARENT);
      assert.equal(setprivStarted, how.startsWith('the kernel'));
      const pending = generate(service, { data: {}, template: '#for i in range(100000000) { let x = i }' }).catch((error: Error) => error);
      // Busy: its CPU time grows.
      const cpu = () => readFileSync(`/proc/${worker}/stat`, 'utf8').split(') ')[1]!.split(' ').slice(11, 13);
      const before = cpu().join();
      while (cpu().join() === before) await new Promise((resolve) => setTimeout(resolve, 50));
      await service.stop('SIGKILL');
      await pending;
      const killed = Date.now();
      while (existsSync(`/proc/${worker}`) && !readFileSync(`/proc/${worker}/stat`, 'utf8').includes(') Z')) {
        assert.ok(Date.now() - killed < 2000, 'the worker ended within 2 s of its server');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
  }
});
