/**
 * Start-up as an operator meets it: keys from the environment or a file,
 * a generated key when none is set, and clear refusals of bad settings.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freedMemoryFill } from '../src/retention/freed-memory-fill.js';
import { V8_FLAGS } from '../src/retention/start-settings.js';
import { generate, MAIN, startService } from './support/service.js';

function runMain(env: Record<string, string>, nodeArgs: string[] = []) {
  return spawnSync(process.execPath, [...nodeArgs, MAIN], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', API_KEYS: 'k', ...env },
    encoding: 'utf8',
    timeout: 15_000,
  });
}

describe('API keys', () => {
  it('generates a key when none is configured, prints it once with a curl line, and requires it', async () => {
    const service = await startService({ API_KEYS: '' });
    try {
      const match = /generated an API key for this run:\s+(\S+)/.exec(service.output());
      assert.ok(match, service.output());
      const key = match[1]!;
      assert.ok(service.output().includes(`curl -X POST ${service.url}/v1/pdf/generate`), service.output());
      assert.equal(service.output().split(key).length - 1, 2, 'the key appears in the banner and the curl line only');
      assert.equal((await generate(service, { data: {}, template: 'x' }, { key: null })).status, 401);
      assert.equal((await generate(service, { data: {}, template: 'x' }, { key: 'wrong' })).status, 401);
      assert.equal((await generate(service, { data: {}, template: 'x' }, { key })).status, 200);
    } finally {
      await service.stop();
    }
  });

  it('accepts plain and SHA-256 entries from API_KEYS and API_KEYS_FILE', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'typst-keys-'));
    const file = join(dir, 'keys');
    const hashed = createHash('sha256').update('from-file-hashed').digest('hex');
    writeFileSync(file, `# team keys\nfrom-file-plain name=billing\nsha256:${hashed} name=reports limit=500\n`);
    const service = await startService({ API_KEYS: 'env-one, env-two', API_KEYS_FILE: file, LOG_LEVEL: 'info' });
    try {
      for (const key of ['env-one', 'env-two', 'from-file-plain', 'from-file-hashed']) {
        const res = await generate(service, { data: {}, template: 'x' }, { key });
        assert.equal(res.status, 200, key);
      }
      // The request line is written after the answer: give it a moment to arrive.
      for (let i = 0; i < 100 && !/"key":"billing"/.test(service.output()); i++) await new Promise((r) => setTimeout(r, 20));
      assert.match(service.output(), /"key":"billing"/, 'the key name is logged');
      assert.ok(!service.output().includes('from-file-plain'), 'the key itself is never logged');
      assert.equal((await generate(service, { data: {}, template: 'x' }, { key: hashed })).status, 401, 'the hash is not a key');
    } finally {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers 401 for missing, malformed and unknown keys before reading the body', async () => {
    const service = await startService();
    try {
      const headersList: Array<Record<string, string>> = [
        {},
        { authorization: 'test-key-0123456789' },
        { authorization: 'Basic dGVzdDp0ZXN0' },
        { authorization: 'Bearer' },
        { authorization: 'Bearer wrong-key' },
      ];
      for (const headers of headersList) {
        const res = await fetch(`${service.url}/v1/pdf/generate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: 'not even json',
        });
        assert.equal(res.status, 401, JSON.stringify(headers));
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
        assert.deepEqual(await res.json(), { error: 'Missing or invalid API Key' });
      }
    } finally {
      await service.stop();
    }
  });
});

describe('settings', () => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /PORT must be a whole number/],
    [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
    [{ WORKERS: '0' }, /WORKERS must be between 1 and 256/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    [{ PACKAGE_PATH: 'relative/dir' }, /PACKAGE_PATH must be an absolute/],
    [{ FONT_PATH: 'fonts' }, /FONT_PATH must be an absolute path of a directory/],
    [{ PACKAGE_PATH: '/nonexistent/packages' }, /PACKAGE_PATH must be an absolute path of a directory/],
    [{ PACKAGE_PATH: '/etc/passwd' }, /PACKAGE_PATH must be an absolute path of a directory/],
    [{ API_KEYS: '', API_KEYS_FILE: '/nonexistent/keys' }, /API_KEYS_FILE cannot be read/],
    // Set, but no key: a generated one would leave every real client with 401s.
    [{ API_KEYS: '', API_KEYS_FILE: '/dev/null' }, /API_KEYS_FILE is set but holds no key/],
    [{ API_KEYS: ',,,' }, /API_KEYS is set but holds no key/],
    [{ API_KEYS: 'sha256:5e884898da28047151d0e56f8dc62927' }, /API_KEYS: entry 1 starts with sha256: but is not 64 hex digits/],
    [{ API_KEYS: 'same-key-0123 name=a,same-key-0123 name=b' }, /the key named b is listed more than once/],
    // A port past 65535 only the URL parser refuses; the password stays out of the message.
    [{ REDIS_URL: 'redis://:s3cret-pw@127.0.0.1:99999' }, /REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL$/m],
  ];
  for (const [env, message] of bad) {
    it(`refuses to start with ${JSON.stringify(env)}`, () => {
      const result = runMain(env);
      assert.equal(result.status, 1);
      assert.match(result.stderr, message);
      assert.ok(!`${result.stdout}${result.stderr}`.includes('s3cret-pw'));
    });
  }

  it('runs the server with freed memory filled and its heap sized, as it restarts itself with both', async () => {
    const service = await startService();
    try {
      const pid = service.process.pid!;
      // The same process (execve keeps the id), now with the allocator's settings and V8's heap flags.
      // glibc ends each tunable it has read with a NUL, in place: the variable reads back with them as ':'.
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').replaceAll('\0', ':');
      for (const [name, value] of Object.entries(freedMemoryFill().env)) assert.ok(environ.includes(`:${name}=${value}:`), environ);
      // Where free-fill.so is built, the server and each worker have it loaded in front of glibc's malloc.
      if (freedMemoryFill().method === 'free-fill') {
        assert.ok(service.workerPids().length > 0, 'workers are up');
        for (const each of [pid, ...service.workerPids()]) assert.match(readFileSync(`/proc/${each}/maps`, 'latin1'), /free-fill\.so/);
      }
      const args = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
      for (const flag of V8_FLAGS) {
        assert.equal(args.filter((a) => a.split('=')[0] === flag.split('=')[0]).length, 1, args.join(' '));
        assert.ok(args.includes(flag), args.join(' '));
      }
    } finally {
      await service.stop();
    }
  });

  it("gives each worker's malloc transparent huge pages where the kernel offers them, and not the server's", async () => {
    const service = await startService({ WORKERS: '1' });
    try {
      // A compile that allocates a few dozen MiB: its memory then sits in 2 MiB pages.
      const template = '#let rows = range(20000).map(i => (str(i), lorem(8)))\n#table(columns: 2, ..rows.slice(0, 400).flatten())';
      assert.equal((await generate(service, { data: {}, template })).status, 200);
      // The worker and the spare, one of which made the document.
      const workers = service.workerPids();
      assert.ok(workers.length > 0, 'workers are up');
      // glibc ends each tunable it has read with a NUL, in place: read back with them as ':'.
      const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'latin1').replaceAll('\0', ':');
      for (const pid of workers) assert.ok(environ(pid).includes(':glibc.malloc.hugetlb=1:'), environ(pid));
      assert.ok(!environ(service.process.pid!).includes('hugetlb'), environ(service.process.pid!));
      const hugeKiB = Math.max(
        ...workers.map((pid) => Number(/AnonHugePages:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'))?.[1])),
      );
      let mode = 'never';
      try {
        mode = /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'latin1'))?.[1] ?? 'never';
      } catch {
        // No transparent huge pages in this kernel: glibc asks for nothing.
      }
      if (mode === 'never') assert.equal(hugeKiB, 0);
      else assert.ok(hugeKiB >= 8192, `${hugeKiB} KiB in huge pages (mode ${mode})`);
    } finally {
      await service.stop();
    }
  });

  it("keeps the operator's own size of a V8 heap flag, given in NODE_OPTIONS", async () => {
    const service = await startService({ NODE_OPTIONS: '--max-semi-space-size=4' });
    try {
      const args = readFileSync(`/proc/${service.process.pid!}/cmdline`, 'latin1').split('\0');
      assert.ok(!args.some((a) => a.startsWith('--max-semi-space-size')), args.join(' '));
      for (const flag of V8_FLAGS.filter((f) => !f.startsWith('--max-semi-space-size'))) assert.ok(args.includes(flag), args.join(' '));
      assert.ok(readFileSync(`/proc/${service.process.pid!}/environ`, 'latin1').includes('NODE_OPTIONS=--max-semi-space-size=4'));
      const response = await fetch(`${service.url}/healthz`);
      assert.equal(response.status, 200);
    } finally {
      await service.stop();
    }
  });

  it('refuses to start on a Node.js that cannot restart it with freed memory filled', () => {
    // A Node.js older than 22.15, as far as the server can tell: no process.execve.
    const result = runMain({}, ['--import', 'data:text/javascript,delete process.execve']);
    assert.equal(result.status, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /cannot restart the server with freed memory filled .*Use Node\.js 22\.15 or later/);
    assert.doesNotMatch(result.stdout, /listening/i);
  });

  it('listens on the HOST and PORT given and prints the address', async () => {
    const service = await startService({ HOST: '127.0.0.1' });
    try {
      assert.match(service.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
    } finally {
      await service.stop();
    }
  });
});
