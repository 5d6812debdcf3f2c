/**
 * The clients against a real service: the typst-pdf command line (success,
 * the service's error with the template line, usage errors, a 429 retried
 * after Retry-After) and the TypeScript module imported by the package name
 * (bytes, typed errors, a 503 retried), plus the wait computed from headers.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
// Imported by the package's own name, as another project would (the workspace's package.json "exports").
import { TypstPdfError, errorFromResponse, generatePdf, parseWarnings, retryWaitMs, type RetryInfo } from 'typst-pdf-client';
import { parsePdf } from './support/pdf.js';
import { pdfAttachments, pdfObjects, pdfSignatures, pdfXmp } from './support/poppler.js';
import { makeTestIdentity, type TestIdentity } from './support/signing-identity.js';
import { generate, readiness, startService, TEST_KEY, type Service } from './support/service.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLIENT = join(ROOT, 'packages', 'client');
const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const CLI = join(CLIENT, manifest.bin['typst-pdf']!);
const EXAMPLES = join(ROOT, 'examples');

/** The CLI's arguments that render the letter example with its logo into `out`. */
const letterArgs = (out: string) => [
  'render',
  '--template',
  join(EXAMPLES, 'letter.typ'),
  '--data',
  join(EXAMPLES, 'letter.json'),
  '--asset',
  join(EXAMPLES, 'letterhead.svg'),
  '--out',
  out,
];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000, encoding: 'utf8' },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const runCliHelp = () => execFileSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });

const dir = mkdtempSync(join(tmpdir(), 'typst-pdf-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('typst-pdf command line', () => {
  let service: Service;
  before(async () => {
    service = await startService({ WORKERS: '1' });
  });
  after(async () => {
    await service?.stop();
  });

  it('is the package\'s "typst-pdf" bin, a node script', () => {
    assert.ok(readFileSync(CLI, 'utf8').startsWith('#!/usr/bin/env node\n'));
  });

  it('renders the letter example with its logo (--asset), with URL and key from the environment, and writes a valid PDF', async () => {
    const out = join(dir, 'letter.pdf');
    const run = await runCli(letterArgs(out), { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /wrote .*letter\.pdf \(\d+ bytes\)/);
    const bytes = readFileSync(out);
    assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
    const pdf = await parsePdf(bytes);
    assert.equal(pdf.pages, 1);
    assert.ok(pdf.fonts.includes('Tinos-Regular'));
    assert.equal(pdf.forms, 1, 'the logo');
  });

  it('sends the files as files with --multipart, and gets the PDF JSON gives', async () => {
    const env = { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY };
    const json = await runCli(letterArgs(join(dir, 'letter-json.pdf')), env);
    const form = await runCli([...letterArgs(join(dir, 'letter-form.pdf')), '--multipart'], env);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(form.code, 0, form.stderr);
    const [a, b] = [await parsePdf(readFileSync(join(dir, 'letter-json.pdf'))), await parsePdf(readFileSync(join(dir, 'letter-form.pdf')))];
    assert.deepEqual(b.text, a.text);
    assert.equal(b.forms, 1, 'the logo');
    assert.match(runCliHelp(), /--multipart +send the files as files/);
  });

  it("prints the service's warnings with the template line, and still writes the PDF", async () => {
    const template = join(dir, 'warned.typ');
    writeFileSync(template, 'Intro\n#set text(font: "Comic Sans MS")\nHi');
    const out = join(dir, 'warned.pdf');
    const run = await runCli(['render', '--template', template, '--out', out, '--quiet'], {
      TYPST_PDF_URL: service.url,
      TYPST_PDF_API_KEY: TEST_KEY,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stderr,
      'typst-pdf: warning: line 2, column 17: unknown font family (not among GET /v1/fonts; Typst uses a fallback font)\n' +
        '2 | #set text(font: "Comic Sans MS")\n  |                 ^\n',
    );
    assert.equal((await parsePdf(readFileSync(out))).pages, 1);
  });

  it('sends --asset NAME=FILE under the name given, and says which file it cannot read', async () => {
    const template = join(dir, 'asset.typ');
    writeFileSync(template, '#read("notes/today.txt")');
    writeFileSync(join(dir, 'local-name.txt'), 'Read from an asset');
    const out = join(dir, 'asset.pdf');
    const env = { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY };
    const run = await runCli(
      ['render', '--template', template, '--asset', `notes/today.txt=${join(dir, 'local-name.txt')}`, '--out', out],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal((await parsePdf(readFileSync(out))).text[0], 'Read from an asset');
    const missing = await runCli(['render', '--template', template, '--asset', join(dir, 'nope.png')], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read .*nope\.png: ENOENT/);
  });

  it('takes the engine and PDF options: --typst 0.14 --pdf-standard a-3b, --no-tagged; refuses others with exit 2', async () => {
    const template = join(dir, 'archive.typ');
    writeFileSync(template, '#set document(title: "Archive")\n= Archived');
    const env = { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY };
    const out = join(dir, 'archive.pdf');
    const run = await runCli(['render', '--template', template, '--typst', '0.14', '--pdf-standard', 'a-3b', '--out', out], env);
    assert.equal(run.code, 0, run.stderr);
    const pdf = readFileSync(out);
    assert.equal((await parsePdf(pdf)).creator, 'Typst 0.14.2');
    assert.match(pdfXmp(pdf), /<pdfaid:part>3</);
    const untagged = await runCli(['render', '--template', template, '--typst', '0.14', '--no-tagged', '--out', out], env);
    assert.equal(untagged.code, 0, untagged.stderr);
    assert.doesNotMatch(pdfObjects(readFileSync(out)), /\/StructTreeRoot/);
    // The service's refusal: PDF options on the 0.11 engine.
    const old = await runCli(['render', '--template', template, '--typst', '0.11', '--pdf-standard', 'a-2b', '--out', out], env);
    assert.equal(old.code, 1);
    assert.match(old.stderr, /^typst-pdf: 400 Field "pdf" needs "typst": "0.14"/);
    for (const args of [
      ['--typst', '0.12'],
      ['--pdf-standard', 'a-5'],
    ]) {
      const wrong = await runCli(['render', '--template', template, ...args], env);
      assert.equal(wrong.code, 2, wrong.stderr);
      assert.match(wrong.stderr, /must be/);
    }
  });

  it('makes an e-invoice: --einvoice-xml FILE --einvoice-profile, on Typst 0.14 without --typst; refuses another profile with exit 2', async () => {
    const template = join(dir, 'invoice.typ');
    writeFileSync(template, '#set document(title: "Invoice")\n= Invoice');
    const xml = join(ROOT, 'test', 'fixtures', 'einvoice', 'minimum.xml');
    const env = { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY };
    const out = join(dir, 'invoice.pdf');
    const run = await runCli(['render', '--template', template, '--einvoice-xml', xml, '--einvoice-profile', 'MINIMUM', '--out', out], env);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(pdfAttachments(readFileSync(out)), ['factur-x.xml']);
    assert.match(pdfXmp(readFileSync(out)), /<fx:ConformanceLevel>MINIMUM</);
    const wrong = await runCli(['render', '--template', template, '--einvoice-profile', 'GOLD'], env);
    assert.equal(wrong.code, 2, wrong.stderr);
    assert.match(wrong.stderr, /--einvoice-profile must be one of MINIMUM, BASIC WL/);
  });

  it("prints the service's syntax error with the line it names, exits 1 and writes nothing", async () => {
    const template = join(dir, 'broken.typ');
    writeFileSync(template, '= Invoice\n\nTotal: #data.total\n#let items = (1, 2\n');
    const out = join(dir, 'broken.pdf');
    const run = await runCli(['render', '--template', template, '--out', out, '--url', service.url, '--api-key', TEST_KEY]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^typst-pdf: 400 Invalid Typst syntax on line 4, column \d+: /m);
    assert.ok(run.stderr.includes('4 | #let items = (1, 2\n'), run.stderr);
    assert.ok(!existsSync(out));
  });

  it("prints the service's message for a wrong key and exits 1", async () => {
    const run = await runCli(['render', '--template', join(EXAMPLES, 'letter.typ'), '--out', join(dir, 'x.pdf')], {
      TYPST_PDF_URL: service.url,
      TYPST_PDF_API_KEY: 'not-a-key',
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^typst-pdf: 401 Missing or invalid API Key$/m);
  });

  it('says so when the service cannot be reached, exit 1', async () => {
    // A loopback port that was free a moment ago: nothing listens there.
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const url = `http://127.0.0.1:${port}`;
    const run = await runCli(['render', '--template', join(EXAMPLES, 'letter.typ'), '--url', url, '--out', join(dir, 'y.pdf')]);
    assert.equal(run.code, 1);
    assert.equal(run.stderr, `typst-pdf: Could not reach ${url}: ECONNREFUSED\n`);
  });

  it('shows the line Typst counts after a lone CR, with the caret under the column after wide characters', async () => {
    const template = join(dir, 'lines.typ');
    writeFileSync(template, 'x\ry\n\u{1F600}\u{1F600} #foo\n#bar\n');
    const run = await runCli(['render', '--template', template, '--out', join(dir, 'lines.pdf')], {
      TYPST_PDF_URL: service.url,
      TYPST_PDF_API_KEY: TEST_KEY,
    });
    assert.equal(run.code, 1);
    assert.equal(
      run.stderr,
      'typst-pdf: 400 Typst error on line 3, column 5: unknown variable: foo\n3 | \u{1F600}\u{1F600} #foo\n  |       ^\n',
    );
  });

  it('never prints a key or a password it cannot send, and refuses them with exit 2 before sending anything', async () => {
    const template = join(EXAMPLES, 'letter.typ');
    const withLineBreak = await runCli(['render', '--template', template, '--out', join(dir, 'k.pdf')], {
      TYPST_PDF_URL: service.url,
      TYPST_PDF_API_KEY: `# my key\n${TEST_KEY}`,
    });
    assert.equal(withLineBreak.code, 2);
    assert.equal(
      withLineBreak.stderr,
      'typst-pdf: The API key holds a character no HTTP header can carry (a line break, a space or a control character, or one past U+00FF)\n',
    );
    // A key read from a file ends in a line break, which fetch drops: it is sent.
    const fromFile = await runCli(
      ['render', '--template', join(EXAMPLES, 'report.typ'), '--data', join(EXAMPLES, 'report.json'), '--out', join(dir, 'k-file.pdf')],
      {
        TYPST_PDF_URL: service.url,
        TYPST_PDF_API_KEY: `${TEST_KEY}\n`,
      },
    );
    assert.equal(fromFile.code, 0, fromFile.stderr);
    const withPassword = await runCli(['render', '--template', template, '--out', join(dir, 'k.pdf')], {
      TYPST_PDF_URL: service.url.replace('://', '://user:s3cret-pass@'),
      TYPST_PDF_API_KEY: TEST_KEY,
    });
    assert.equal(withPassword.code, 2);
    assert.equal(withPassword.stderr, 'typst-pdf: The service URL must not hold a user name or password: the API key authenticates\n');
    assert.ok(!existsSync(join(dir, 'k.pdf')));
  });

  it('refuses a file larger than a whole request before reading it, exit 2', async () => {
    const big = join(dir, 'big.bin');
    // A sparse file: its size without its disk space.
    writeFileSync(big, '');
    truncateSync(big, 10 * 1024 * 1024 + 1);
    const run = await runCli(['render', '--template', join(EXAMPLES, 'letter.typ'), '--asset', big], {
      TYPST_PDF_URL: service.url,
      TYPST_PDF_API_KEY: TEST_KEY,
    });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^typst-pdf: \S+big\.bin is larger than the service takes in a request \(10 MB\)\n/);
  });

  it('refuses a wrong command line with exit 2, and answers --help and --version', async () => {
    for (const args of [[], ['render'], ['draw', '--template', 'a.typ'], ['render', '--template', 'missing.typ'], ['render', '--bogus']]) {
      const run = await runCli(args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /^typst-pdf: .+\nRun 'typst-pdf --help' for usage\.\n$/);
    }
    const notObject = join(dir, 'list.json');
    writeFileSync(notObject, '[1, 2]');
    const run = await runCli(['render', '--template', join(EXAMPLES, 'letter.typ'), '--data', notObject]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /must hold a JSON object/);
    const help = await runCli(['--help']);
    assert.equal(help.code, 0);
    for (const flag of [
      '--template',
      '--data',
      '--out',
      '--url',
      '--api-key',
      '--retries',
      '--max-wait',
      '--typst',
      '--pdf-standard',
      '--no-tagged',
      '--sign',
      '--sign-reason',
      'TYPST_PDF_URL',
      'TYPST_PDF_API_KEY',
    ]) {
      assert.ok(help.stdout.includes(flag), flag);
    }
    assert.match((await runCli(['--version'])).stdout, /^typst-pdf \d+\.\d+\.\d+\n$/);
  });
});

describe('typst-pdf --sign', () => {
  let service: Service;
  let identity: TestIdentity;
  let dir: string;
  before(async () => {
    identity = makeTestIdentity();
    dir = mkdtempSync(join(tmpdir(), 'typst-pdf-sign-'));
    service = await startService({ WORKERS: '1', ...identity.env });
  });
  after(async () => {
    await service.stop();
    identity.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('asks for a signature (--sign-reason implies --sign), on either engine; without an identity the refusal is exit 1', async () => {
    const template = join(dir, 'contract.typ');
    writeFileSync(template, '= Contract\nAgreed.');
    const env = { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY };
    const out = join(dir, 'contract.pdf');
    const reasoned = await runCli(['render', '--template', template, '--sign-reason', 'Approved by legal', '--out', out], env);
    assert.equal(reasoned.code, 0, reasoned.stderr);
    const [signature] = pdfSignatures(readFileSync(out));
    assert.equal(signature!['Signature Validation'], 'Signature is Valid.');
    assert.match(pdfObjects(readFileSync(out)), /\/Reason \(Approved by legal\)/);
    const plain = await runCli(['render', '--template', template, '--typst', '0.14', '--sign', '--out', out], env);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(pdfSignatures(readFileSync(out))[0]!['Total document signed'], 'yes');
    const bare = await startService({ WORKERS: '1' });
    try {
      const refused = await runCli(['render', '--template', template, '--sign', '--out', out], { ...env, TYPST_PDF_URL: bare.url });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /400 This service has no signing identity configured/);
    } finally {
      await bare.stop();
    }
  });
});

describe('typst-pdf retries a 429', () => {
  let service: Service;
  // One request per 3-second window: long enough that the command below
  // certainly starts inside the window the first request used up.
  before(async () => {
    service = await startService({ WORKERS: '1', RATE_LIMIT_PER_MINUTE: '1', RATE_LIMIT_WINDOW_MS: '3000' });
  });
  after(async () => {
    await service?.stop();
  });

  async function useUpTheWindow() {
    for (let i = 0; i < 3; i++) {
      const res = await generate(service, { data: {}, template: 'x' });
      await res.arrayBuffer();
      if (res.status === 429) return;
    }
    assert.fail('no 429 after 3 requests with a limit of 1');
  }

  it('waits as Retry-After says, then succeeds', async () => {
    await useUpTheWindow();
    const out = join(dir, 'retried.pdf');
    const run = await runCli(
      ['render', '--template', join(EXAMPLES, 'report.typ'), '--data', join(EXAMPLES, 'report.json'), '--out', out],
      {
        TYPST_PDF_URL: service.url,
        TYPST_PDF_API_KEY: TEST_KEY,
      },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^typst-pdf: 429 Rate limit exceeded \(retrying in [1-3]\.0 s, attempt 2 of 3\)$/m);
    assert.equal((await parsePdf(readFileSync(out))).pages, 1);
  });

  it('gives up at once when the wait does not fit in --max-wait, with the 429 message, exit 1', async () => {
    await useUpTheWindow();
    const run = await runCli(['render', '--template', join(EXAMPLES, 'report.typ'), '--max-wait', '0', '--out', join(dir, 'z.pdf')], {
      TYPST_PDF_URL: service.url,
      TYPST_PDF_API_KEY: TEST_KEY,
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^typst-pdf: 429 Rate limit exceeded$/m);
    assert.match(run.stderr, /retry after [1-3] s/);
    assert.ok(!run.stderr.includes('retrying'));
  });
});

describe('TypeScript client', () => {
  let service: Service;
  before(async () => {
    // One worker and no queue: while it compiles, other requests get 503.
    service = await startService({ WORKERS: '1', QUEUE_LIMIT: '0' });
  });
  after(async () => {
    await service?.stop();
  });

  it('encodes bytes given as assets, and sends strings as they are', async () => {
    const { pdf: bytes } = await generatePdf(
      {
        data: {},
        template: '#read("a.txt") #read("b.txt")',
        assets: { 'a.txt': new TextEncoder().encode('from bytes'), 'b.txt': Buffer.from('as base64').toString('base64') },
      },
      { url: service.url, apiKey: TEST_KEY },
    );
    assert.equal((await parsePdf(bytes)).text[0], 'from bytes as base64');
  });

  it('sends a multipart form with encoding "multipart": bytes and base64 assets as files, the engine and options as fields', async () => {
    const request = {
      data: { name: 'Müller' },
      template: '#set document(title: "T")\n= #data.name\n#read("Rechnung Müller.txt") #read("b.txt")',
      assets: { 'Rechnung Müller.txt': new TextEncoder().encode('from bytes'), 'b.txt': Buffer.from('as base64').toString('base64') },
      typst: '0.14' as const,
      pdf: { standard: 'a-2b' as const },
    };
    const form = await generatePdf(request, { url: service.url, apiKey: TEST_KEY, encoding: 'multipart' });
    const json = await generatePdf(request, { url: service.url, apiKey: TEST_KEY });
    assert.equal(form.typstVersion, '0.14.2');
    assert.deepEqual((await parsePdf(form.pdf)).text, (await parsePdf(json.pdf)).text);
    assert.match((await parsePdf(form.pdf)).text[0]!, /Müller\s+from bytes as base64/);
    assert.match(pdfXmp(form.pdf), /<pdfaid:part>2</);
  });

  it('resolves to the PDF bytes, the Typst version and no warnings', async () => {
    const { pdf, warnings, typstVersion } = await generatePdf(
      { data: { name: 'World' }, template: '= Hello #data.name' },
      { url: service.url, apiKey: TEST_KEY },
    );
    assert.ok(pdf instanceof Uint8Array);
    assert.ok((await parsePdf(pdf)).text[0]!.includes('Hello World'));
    assert.deepEqual(warnings, []);
    assert.equal(typstVersion, '0.11.1');
  });

  it('sends the engine and the PDF options', async () => {
    const { pdf, typstVersion } = await generatePdf(
      { data: {}, template: '#set document(title: "T")\nAccessible', typst: '0.14', pdf: { standard: 'ua-1', tagged: true } },
      { url: service.url, apiKey: TEST_KEY },
    );
    assert.equal(typstVersion, '0.14.2');
    assert.match(pdfXmp(pdf), /<pdfuaid:part>1</);
  });

  it('sends pdf.einvoice and returns the business-rule warnings (none here) beside the PDF', async () => {
    const xml = readFileSync(join(ROOT, 'test', 'fixtures', 'einvoice', 'minimum.xml'));
    const { pdf, einvoiceWarnings } = await generatePdf(
      {
        data: {},
        template: '= Invoice',
        typst: '0.14',
        assets: { 'min.xml': xml },
        pdf: { einvoice: { xml: 'min.xml', profile: 'MINIMUM' } },
      },
      { url: service.url, apiKey: TEST_KEY },
    );
    assert.deepEqual(pdfAttachments(pdf), ['factur-x.xml']);
    assert.deepEqual(einvoiceWarnings, []);
  });

  it("returns the service's warnings beside the PDF", async () => {
    const { pdf, warnings } = await generatePdf(
      { data: {}, template: 'Intro\n#set text(font: "Comic Sans MS")\nHi' },
      { url: service.url, apiKey: TEST_KEY },
    );
    assert.equal((await parsePdf(pdf)).pages, 1);
    assert.deepEqual(warnings, ['line 2, column 17: unknown font family (not among GET /v1/fonts; Typst uses a fallback font)']);
    assert.deepEqual(parseWarnings('2; line 1, column 2: a | line 3, column 4: b'), ['line 1, column 2: a', 'line 3, column 4: b']);
  });

  it("rejects with a TypstPdfError carrying the status and the service's message", async () => {
    await assert.rejects(generatePdf({ data: {}, template: '#data.missing' }, { url: service.url, apiKey: TEST_KEY }), (error: unknown) => {
      assert.ok(error instanceof TypstPdfError);
      assert.equal(error.status, 400);
      assert.match(error.message, /^Typst error on line 1, column 7: dictionary does not contain key "missing"/);
      assert.ok(error.requestId);
      return true;
    });
    await assert.rejects(generatePdf({ data: {}, template: 'x' }, { url: service.url, apiKey: 'wrong' }), {
      name: 'TypstPdfError',
      status: 401,
      message: 'Missing or invalid API Key',
    });
  });

  it('retries a 503 after Retry-After until the worker is free', async () => {
    // A compile that keeps the only worker busy for about a second.
    const busy = generate(service, { data: {}, template: '#let n = 0\n#for i in range(2000000) { n += 1 }\n#n' });
    for (let i = 0; (await readiness(service)).busy !== 1; i++) {
      assert.ok(i < 200, 'the busy compile did not start');
      await new Promise((r) => setTimeout(r, 10));
    }
    const retries: RetryInfo[] = [];
    const { pdf: bytes } = await generatePdf(
      { data: {}, template: 'after the wait' },
      { url: service.url, apiKey: TEST_KEY, retries: 8, maxRetryWaitMs: 20_000, onRetry: (info) => retries.push(info) },
    );
    assert.ok((await parsePdf(bytes)).text[0]!.includes('after the wait'));
    assert.ok(retries.length >= 1);
    assert.deepEqual(retries[0], {
      status: 503,
      message: 'Service temporarily unavailable. Please try again later.',
      waitMs: 1000,
      attempt: 2,
      maxAttempts: 9,
    });
    assert.equal((await busy).status, 200);
  });
});

/**
 * What stands between a client and the service can break an answer: a
 * connection cut after the head, a login page answered 200. A server of
 * node:http plays that part.
 */
describe('the client against an answer that is not the PDF', () => {
  let server: HttpServer;
  let url: string;
  before(async () => {
    server = createHttpServer((request, response) => {
      request.resume();
      if (request.url?.startsWith('/cut/')) {
        response.writeHead(200, { 'content-type': 'application/pdf', 'content-length': '1000' });
        response.write('%PDF-');
        setTimeout(() => response.socket?.destroy(), 20);
      } else {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end('<html>Please log in</html>');
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('rejects an answer cut off after its head with a TypstPdfError of status 0; the CLI exits 1', async () => {
    await assert.rejects(generatePdf({ data: {}, template: 'x' }, { url: `${url}/cut/`, apiKey: TEST_KEY }), (error: unknown) => {
      assert.ok(error instanceof TypstPdfError);
      assert.equal(error.status, 0);
      assert.equal(error.message, `The answer from ${url} broke off before the whole PDF arrived: UND_ERR_SOCKET`);
      return true;
    });
    const run = await runCli(['render', '--template', join(EXAMPLES, 'letter.typ'), '--out', join(dir, 'cut.pdf')], {
      TYPST_PDF_URL: `${url}/cut/`,
      TYPST_PDF_API_KEY: TEST_KEY,
    });
    assert.equal(run.code, 1);
    assert.equal(run.stderr, `typst-pdf: The answer from ${url} broke off before the whole PDF arrived: UND_ERR_SOCKET\n`);
    assert.ok(!existsSync(join(dir, 'cut.pdf')));
  });

  it('rejects a 200 that is not a PDF, naming its Content-Type; the CLI writes nothing and exits 1', async () => {
    await assert.rejects(generatePdf({ data: {}, template: 'x' }, { url: `${url}/login/` }), {
      name: 'TypstPdfError',
      status: 200,
      message: 'The answer is not a PDF (Content-Type: text/html)',
    });
    const run = await runCli(['render', '--template', join(EXAMPLES, 'letter.typ'), '--out', join(dir, 'login.pdf')], {
      TYPST_PDF_URL: `${url}/login/`,
    });
    assert.equal(run.code, 1);
    assert.equal(run.stderr, 'typst-pdf: 200 The answer is not a PDF (Content-Type: text/html)\n');
    assert.ok(!existsSync(join(dir, 'login.pdf')));
  });

  it('refuses a key no header can carry and a URL with a password, quoting neither', async () => {
    await assert.rejects(generatePdf({ data: {}, template: 'x' }, { url, apiKey: 'sec\nret-key-0123' }), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.ok(!error.message.includes('ret-key'), error.message);
      return true;
    });
    await assert.rejects(generatePdf({ data: {}, template: 'x' }, { url: url.replace('://', '://me:pass-word@') }), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.ok(!error.message.includes('pass-word'), error.message);
      return true;
    });
  });
});

describe('retry wait from headers', () => {
  const now = Date.UTC(2024, 9, 7, 12, 0, 0);
  it('takes Retry-After in seconds or as a date, else X-RateLimit-Reset while it is ahead, else one second', () => {
    assert.equal(retryWaitMs(new Headers({ 'retry-after': '3' }), now), 3000);
    assert.equal(retryWaitMs(new Headers({ 'retry-after': new Date(now + 5000).toUTCString() }), now), 5000);
    assert.equal(retryWaitMs(new Headers({ 'x-ratelimit-reset': String(now / 1000 + 7) }), now), 7000);
    assert.equal(retryWaitMs(new Headers({ 'retry-after': '2', 'x-ratelimit-reset': String(now / 1000 + 7) }), now), 2000);
    assert.equal(retryWaitMs(new Headers(), now), 1000);
    // A reset the local clock sees as past (the window ended, or the clocks disagree) is no reason to retry at once.
    assert.equal(retryWaitMs(new Headers({ 'x-ratelimit-reset': String(now / 1000 - 30) }), now), 1000);
  });

  it("gives the error the Retry-After's seconds, or the seconds to its date", async () => {
    const seconds = await errorFromResponse(new Response('{"error":"busy"}', { status: 503, headers: { 'retry-after': '2' } }));
    assert.equal(seconds.retryAfterSeconds, 2);
    const date = new Date(Date.now() + 60_000).toUTCString();
    const dated = await errorFromResponse(new Response('{"error":"busy"}', { status: 503, headers: { 'retry-after': date } }));
    assert.ok(dated.retryAfterSeconds! > 55 && dated.retryAfterSeconds! <= 60, String(dated.retryAfterSeconds));
    assert.equal((await errorFromResponse(new Response('', { status: 400 }))).retryAfterSeconds, undefined);
  });
});

describe('the client as a package of its own', () => {
  let service: Service;
  let home: string;
  before(async () => {
    service = await startService({ WORKERS: '1' });
    home = mkdtempSync(join(tmpdir(), 'typst-pdf-client-install-'));
  });
  after(async () => {
    await service?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('packs, installs into an empty project with nothing else, and renders through the service', async () => {
    const npm = (args: string[], cwd: string) =>
      execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8' });
    const tarball = join(home, npm(['pack', '--pack-destination', home], CLIENT).trim().split('\n').at(-1)!);
    const project = join(home, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-the-client', private: true, type: 'module' }));
    npm(['install', tarball], project);
    // The client and nothing else: it has no dependencies.
    assert.deepEqual(
      readdirSync(join(project, 'node_modules'))
        .filter((name) => !name.startsWith('.'))
        .sort(),
      ['typst-pdf-client'],
    );
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', 'typst-pdf-client', 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.equal(installed.dependencies, undefined);

    writeFileSync(
      join(project, 'render.mjs'),
      `import { generatePdf } from 'typst-pdf-client';\n` +
        `const { pdf, warnings } = await generatePdf({ data: { who: 'the package' }, template: 'Rendered by #data.who' }, { url: process.argv[2], apiKey: process.argv[3] });\n` +
        `process.stdout.write(JSON.stringify({ bytes: pdf.byteLength, head: new TextDecoder().decode(pdf.subarray(0, 5)), warnings }));\n`,
    );
    const result = JSON.parse(
      execFileSync(process.execPath, ['render.mjs', service.url, TEST_KEY], { cwd: project, encoding: 'utf8' }),
    ) as { head: string; warnings: string[] };
    assert.deepEqual({ head: result.head, warnings: result.warnings }, { head: '%PDF-', warnings: [] });

    writeFileSync(join(project, 'hello.typ'), '= Hello from the installed command');
    const bin = join(project, 'node_modules', '.bin', 'typst-pdf');
    execFileSync(bin, ['render', '--template', 'hello.typ', '--quiet'], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY },
    });
    assert.equal((await parsePdf(readFileSync(join(project, 'hello.pdf')))).text[0], 'Hello from the installed command');
  });
});
