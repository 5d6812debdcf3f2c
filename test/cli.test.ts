/**
 * The command line and the settings: --help and --version answer without
 * starting anything, every setting is documented in --help and the README,
 * and bad values of the operability settings stop the start by name.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SETTINGS, settingsTable } from '../src/config.js';
import { MAIN } from './support/service.js';

function runMain(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', API_KEYS: 'k', ...env },
    encoding: 'utf8',
    // A service that starts after all is killed at the timeout, not asked to shut down (it would keep the test waiting).
    killSignal: 'SIGKILL',
    timeout: 15_000,
  });
}

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('command line', () => {
  it('--version prints the service, Node and Typst versions and exits 0', () => {
    const result = runMain(['--version']);
    assert.equal(result.status, 0);
    assert.match(result.stdout, new RegExp(`^typst-pdf-service ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
    assert.ok(result.stdout.includes(`Node.js ${process.versions.node}`));
    assert.match(result.stdout, /^Typst 0\.11\.1 \(@myriaddreamin\/typst-ts-node-compiler 0\.5\.0-rc7\)$/m);
    assert.match(result.stdout, /^Typst 0\.14\.2 \(@myriaddreamin\/typst-ts-node-compiler 0\.7\.0\)$/m);
    assert.ok(!result.stdout.includes('listening'));
  });

  it('--help prints every setting with its default and current value, hides keys, and starts nothing', () => {
    const result = runMain(['--help'], { API_KEYS: 'super-secret-key', WORKERS: '3', PORT: 'not-a-port' });
    assert.equal(result.status, 0, result.stderr);
    assert.ok(!result.stdout.includes('listening'));
    assert.ok(!result.stdout.includes('super-secret-key'));
    assert.match(result.stdout, /^API_KEYS +\(none\) +\(set\) /m);
    assert.match(result.stdout, /^WORKERS +number of cores +3 /m);
    assert.match(result.stdout, /Typst 0\.11\.1/);
    for (const setting of SETTINGS) assert.match(result.stdout, new RegExp(`^${setting.name} `, 'm'), setting.name);
  });

  it("the README's table is the settings table, row for row", () => {
    assert.ok(README.includes(settingsTable()), `README.md should hold, verbatim:\n${settingsTable()}`);
  });

  it('refuses anything else on the command line: settings come from the environment', () => {
    const result = runMain(['--port', '8080']);
    assert.equal(result.status, 1);
    assert.match(result.stderr, /^typst-pdf-service: Unknown option '--port'.*Settings come from the environment/);
    assert.ok(!result.stdout.includes('listening'));
  });
});

describe('operability settings', () => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ METRICS_PORT: 'metrics' }, /^typst-pdf-service: METRICS_PORT must be a whole number/],
    [{ METRICS_PORT: '99999' }, /METRICS_PORT must be between 0 and 65535/],
    [{ SHUTDOWN_TIMEOUT_MS: '-1' }, /SHUTDOWN_TIMEOUT_MS must be a whole number/],
    [{ SHUTDOWN_TIMEOUT_MS: '1h' }, /SHUTDOWN_TIMEOUT_MS must be a whole number/],
    [{ QUEUE_TIMEOUT_MS: '0' }, /QUEUE_TIMEOUT_MS must be between 1 and 600000/],
  ];
  for (const [env, message] of bad) {
    it(`refuses to start with ${JSON.stringify(env)}, naming the variable`, () => {
      const result = runMain([], env);
      assert.equal(result.status, 1);
      assert.match(result.stderr, message);
      assert.ok(!result.stdout.includes('listening'));
    });
  }
});
