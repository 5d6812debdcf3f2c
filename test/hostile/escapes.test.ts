/**
 * File and network escapes with URL-like paths, each followed by a normal
 * request. A loopback listener, set as every proxy and named in the paths
 * themselves, proves no connection is attempted.
 *
 * Absolute and `..` paths for every reading function, and `@preview`
 * imports with PACKAGE_PATH, are in test/isolation.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, proxyTrap, record, send, type ProxyTrap, NO_RATE_LIMIT } from '../support/hostile.js';
import { startService, type Service } from '../support/service.js';

const WORKERS = 2;
const SERVER_PATHS = ['typst-pdf-service-virtual-root', process.cwd(), '/work', '/root', '/tmp', 'node_modules'];

describe('URL-like paths and packages', () => {
  let trap: ProxyTrap;
  let service: Service;
  before(async () => {
    trap = await proxyTrap();
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS), ...trap.env });
  });
  after(async () => {
    await service.stop();
    await trap.close();
  });

  const templates = () => {
    const here = trap.url; // http://127.0.0.1:<port>
    return [
      `#read("${here}/secret.txt")`,
      `#image("${here}/logo.png")`,
      `#json("${here}/data.json")`,
      `#csv("${here}/data.csv")`,
      `#plugin("${here}/plugin.wasm")`,
      `#include "${here}/chapter.typ"`,
      `#import "${here}/lib.typ": *`,
      '#read("https://example.com/")',
      '#image("file:///usr/share/pixmaps/debian-logo.png")',
      '#json("file://localhost/etc/os-release")',
      '#csv("//localhost/etc/passwd")',
      '#read("~/.bashrc")',
      '#read("\\\\\\\\server\\\\share\\\\file")',
      '#read("/proc/self/cwd/package.json")',
      '#import "@preview/cetz:0.2.2": canvas',
      '#import "@preview/tablex:0.0.8"',
      '#include "@local/secret:1.0.0"',
      // Built at run time, so Typst itself resolves it (and would download it if it could).
      '#let p = "@pre" + "view/cetz:0.2.2"\n#import p: canvas',
    ];
  };

  it('every escape -> 400 without a server path, and the pool stays whole', async (t) => {
    for (const template of templates()) {
      const answer = await send(service, { data: {}, template });
      record(t, { ...answer, error: `${template} -> ${answer.error}` });
      assert.equal(answer.status, 400, `${template} -> ${answer.status}`);
      assert.match(
        answer.error!,
        /^Typst error on line [12], column \d+: (file not found|failed to load file|package @\S+ is not available|file is not valid utf-8)/,
        template,
      );
      for (const path of SERVER_PATHS) assert.ok(!answer.error!.includes(path), `"${answer.error}" shows a server path`);
      await assertRecovered(service, WORKERS);
    }
  });

  it('attempted no connection', () => {
    assert.equal(trap.connections(), 0);
  });
});
