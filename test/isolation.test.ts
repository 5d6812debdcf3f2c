/**
 * The compiler reaches nothing of the host: no file, no network, and
 * nothing of a request is left in logs or files.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { proxyTrap, type ProxyTrap } from './support/hostile.js';
import { addPackage, packageDirectory } from './support/packages.js';
import { parsePdf } from './support/pdf.js';
import { generate, startService, type Service, logsWritten } from './support/service.js';

const SERVER_PATHS = ['typst-pdf-service-virtual-root', process.cwd(), '/work', '/root', '/tmp', 'node_modules'];

async function escapeError(service: Service, template: string): Promise<string> {
  const res = await generate(service, { data: {}, template });
  assert.equal(res.status, 400, `${template} -> ${res.status}`);
  const { error } = (await res.json()) as { error: string };
  for (const path of SERVER_PATHS) assert.ok(!error.includes(path), `"${error}" shows a server path`);
  return error;
}

describe('file system', () => {
  let service: Service;
  before(async () => {
    service = await startService();
  });
  after(async () => {
    await service.stop();
  });

  const escapes = [
    '#read("/etc/passwd")',
    '#read("../../../../../etc/passwd")',
    '#read("/proc/self/environ")',
    '#read("file:///etc/passwd")',
    '#image("/etc/hostname")',
    '#image("../../usr/share/pixmaps/debian-logo.png")',
    '#json("/etc/os-release")',
    '#csv("/etc/passwd")',
    '#yaml("/etc/passwd")',
    '#plugin("/usr/lib/plugin.wasm")',
    '#include "/etc/passwd"',
    '#include "../../../etc/hostname"',
    '#import "/etc/passwd": *',
    '#import "lib.typ": *',
  ];
  for (const template of escapes) {
    it(`refuses ${template} with a 400 that shows no server path`, async () => {
      const error = await escapeError(service, template);
      assert.match(error, /^Typst error on line 1, column \d+: (file not found|failed to load file)/);
    });
  }

  it('has no file of the service under any name a template can use', async () => {
    for (const path of ['/request.json', 'request.json', '/data.json', '/main.typ']) {
      const error = await escapeError(service, `#read("${path}")`);
      assert.match(error, /^Typst error on line 1, column \d+: file not found/);
    }
  });
});

describe('packages and network', () => {
  let proxy: ProxyTrap;
  let service: Service;
  let packages: string;

  before(async () => {
    // A loopback listener set as every proxy the compiler could use: it must see no connection.
    proxy = await proxyTrap();
    packages = packageDirectory('#let greet(name) = [Greetings, #name!]\n');
    addFailingPackages(packages);
    service = await startService({
      PACKAGE_PATH: packages,
      ...proxy.env,
    });
  });
  after(async () => {
    await service.stop();
    await proxy.close();
    rmSync(packages, { recursive: true, force: true });
  });

  it('fails fast with a 400 naming a package that is not provided', async () => {
    const started = Date.now();
    const error = await escapeError(service, 'Intro\n#import "@preview/cetz:0.2.2": canvas');
    assert.ok(Date.now() - started < 2000);
    assert.match(error, /^Typst error on line 2, column \d+: package @preview\/cetz:0\.2\.2 is not available/);
  });

  it('fails a package name built at run time the same way, without a connection', async () => {
    const error = await escapeError(service, '#let p = "@pre" + "view/cetz:0.2.2"\n#import p: canvas');
    assert.match(error, /package @preview\/cetz:0\.2\.2 is not available/);
  });

  it('loads a package from PACKAGE_PATH', async () => {
    const res = await generate(service, { data: { who: 'Ada' }, template: '#import "@preview/greeting:0.1.0": greet\n#greet(data.who)' });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await parsePdf(await res.arrayBuffer())).text[0], 'Greetings, Ada!');
  });

  it("names a package's missing file in its package, on both engines, and shows no server path", async () => {
    await packageErrorsNameThePackage(service);
  });

  it("leaves a message's text as it was where it names PACKAGE_PATH (Typst never sees that path: it is no secret to cut out)", async () => {
    const res = await generate(service, { data: {}, template: `#panic("see ${packages}/preview")` });
    assert.equal(res.status, 400);
    assert.equal(
      ((await res.json()) as { error: string }).error,
      `Typst error on line 1, column 2: panicked with: "see ${packages}/preview"`,
    );
  });

  it('opened no connection to any proxy', () => {
    assert.equal(proxy.connections(), 0);
  });
});

/** A package whose functions fail: a file it lacks, a panic, and a file of its own with the name the request's data has in Typst 0.14. */
const READER = '#let missing() = read("data/missing.txt")\n#let fail() = panic("out of order")\n#let config() = json("~data.json")\n';

/** Packages for the error messages: `reader` (READER), `noentry` (its entry point missing), `outer` (imports `noentry`). */
function addFailingPackages(root: string): void {
  writeFileSync(join(addPackage(root, 'reader', '0.1.0', READER), '~data.json'), '{bad');
  rmSync(join(addPackage(root, 'noentry', '0.1.0', ''), 'lib.typ'));
  addPackage(root, 'outer', '0.1.0', '#import "@preview/noentry:0.1.0": *\n');
}

const PACKAGE_FILE_HINT = "hint: a package reads only its own files, and the request's assets are not among them";

/** A package's errors name its file as `@preview/reader:0.1.0/lib.typ`, and a missing file in the package that lacks it. */
async function packageErrorsNameThePackage(service: Service): Promise<void> {
  const cases: { template: string; error: string | RegExp }[] = [
    {
      template: '#import "@preview/reader:0.1.0": missing\n#missing()',
      error: `Typst error in @preview/reader:0.1.0/lib.typ on line 1, column 23: file not found in package @preview/reader:0.1.0: data/missing.txt; ${PACKAGE_FILE_HINT}`,
    },
    {
      template: '#import "@preview/reader:0.1.0": fail\n#fail()',
      error: 'Typst error in @preview/reader:0.1.0/lib.typ on line 2, column 15: panicked with: "out of order"',
    },
    // The package's own JSON, not the request's data, whatever its name.
    {
      template: '#import "@preview/reader:0.1.0": config\n#config()',
      // 0.11 places the error at the call, 0.14 in the file.
      error: /^Typst error in @preview\/reader:0\.1\.0\/(lib\.typ on line 3, column \d+|~data\.json): failed to parse JSON/,
    },
    {
      template: '#import "@preview/noentry:0.1.0": *',
      error: `Typst error on line 1, column 9: file not found in package @preview/noentry:0.1.0: lib.typ; ${PACKAGE_FILE_HINT}`,
    },
    {
      template: '#import "@preview/outer:0.1.0": *',
      error: `Typst error in @preview/outer:0.1.0/lib.typ on line 1, column 9: file not found in package @preview/noentry:0.1.0: lib.typ; ${PACKAGE_FILE_HINT}`,
    },
  ];
  for (const typst of ['0.11', '0.14']) {
    for (const { template, error } of cases) {
      const res = await generate(service, { data: {}, typst, template });
      assert.equal(res.status, 400);
      const answered = ((await res.json()) as { error: string }).error;
      if (typeof error === 'string') assert.equal(answered, error, `${template} on ${typst}`);
      else assert.match(answered, error, `${template} on ${typst}`);
      for (const path of SERVER_PATHS) assert.ok(!answered.includes(path), `"${answered}" shows a server path`);
    }
  }
}

describe('packages used in place (PACKAGE_PATH not copied: a file in it names eval)', () => {
  let service: Service;
  let packages: string;
  before(async () => {
    packages = packageDirectory('#let run(code) = eval(code)\n');
    addFailingPackages(packages);
    service = await startService({ PACKAGE_PATH: packages, WORKERS: '1' });
  });
  after(async () => {
    await service.stop();
    rmSync(packages, { recursive: true, force: true });
  });

  it("names a package's missing file in its package, on both engines, and shows no server path", async () => {
    await packageErrorsNameThePackage(service);
  });
});

/** True if any readable file under `path` contains `text`. */
function fileTreeContains(path: string, text: string): boolean {
  try {
    const stat = statSync(path);
    if (stat.isDirectory()) return readdirSync(path).some((name) => fileTreeContains(join(path, name), text));
    return stat.isFile() && stat.size < 64 * 1024 * 1024 && readFileSync(path).includes(text);
  } catch {
    return false; // gone or unreadable meanwhile
  }
}

describe('zero data retention', () => {
  let service: Service;
  before(async () => {
    service = await startService({ LOG_LEVEL: 'trace' });
  });
  after(async () => {
    await service.stop();
  });

  it('writes no file and logs nothing of the request, the template or Typst messages', async () => {
    const marker = `secret-${Math.random().toString(36).slice(2)}`;
    const tmpBefore = readdirSync(tmpdir()).sort();
    const cwdBefore = readdirSync(process.cwd()).sort();
    const requests = [
      { data: { secret: marker }, template: `#data.secret // ${marker}` },
      { data: { secret: marker }, template: `#let ${marker.replace(/-/g, '_')} = (` },
      { data: { secret: marker }, template: `#panic("${marker}")` },
      { data: { secret: marker }, template: `#read("/${marker}")` },
      { data: { secret: marker }, template: `#set text(font: "${marker}")\nx` },
    ];
    for (const body of requests) {
      const res = await generate(service, body, { headers: { 'x-request-id': 'retention-check' } });
      await res.arrayBuffer();
    }
    await generate(service, `{"data":{"s":"${marker}"`);
    await logsWritten();
    const output = service.output();
    // The id sent is logged as its digest (http/request-id.ts): the lines are there, the id as sent is not.
    const loggedId = `sha256:${createHash('sha256').update('retention-check').digest('hex').slice(0, 32)}`;
    assert.ok(output.includes(loggedId), 'request lines are logged');
    assert.ok(!output.includes('retention-check'), 'the log shows the request id as sent');
    assert.ok(!output.includes(marker), 'the log shows request content');
    // Other programs may create files here meanwhile; none of the new ones may hold the request's content.
    for (const [dir, before] of [
      [tmpdir(), tmpBefore],
      [process.cwd(), cwdBefore],
    ] as const) {
      for (const entry of readdirSync(dir).filter((name) => !before.includes(name))) {
        assert.ok(!fileTreeContains(join(dir, entry), marker), `${join(dir, entry)} holds request content`);
      }
    }
  });
});
