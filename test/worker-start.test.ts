/**
 * A worker's start: its command line holds only Node's flags and the
 * script, its options (the font catalogue with them) come over the IPC
 * channel, and a worker that gets none ends instead of waiting for ever.
 */
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
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
      for (const pid of pids) assert.deepEqual(commandLine(pid).slice(1), [...WORKER_NODE_FLAGS, WORKER]);
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
});
