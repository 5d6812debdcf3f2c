/**
 * The template playground in a real browser (Debian's chromium through
 * playwright-core) against the real service: what it serves and under which
 * Content-Security-Policy, the preview of the default example, an error's
 * line named and marked, warnings (non-ASCII text decoded from the header's
 * escapes), assets, examples, fonts, zoom, download, curl,
 * keyboard use and axe-core, with no console error along the way.
 *
 * The tests run in order on one page, as one person's session.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { warningsHeader } from '../src/messages.js';
import {
  browserMissing,
  launchBrowser,
  previewCanvases,
  runAxe,
  settledPreview,
  waitForPreview,
  type Browser,
  type CanvasSummary,
  type ConsoleWatch,
} from './support/browser.js';
import {
  appendLine,
  editorLines,
  errorText,
  KEY_STORAGE,
  loadWithKey,
  openPage,
  previewRevision,
  removeLastLine,
  replaceLine,
  waitForError,
} from './support/playground.js';
import { solidPng } from './support/png.js';
import { startService, TEST_KEY, type Service } from './support/service.js';

declare const document: any;
declare const window: any;
declare const navigator: any;
declare const sessionStorage: any;
declare const localStorage: any;

const missing = browserMissing();
const MARKER_PNG = solidPng(60, 60, [255, 0, 0]);

describe('playground', { skip: missing }, () => {
  let service: Service;
  let browser: Browser;
  let page: Page;
  let watch: ConsoleWatch;
  let firstPreview: CanvasSummary;
  const requestUrls: string[] = [];
  const generateBodies: Array<Record<string, unknown>> = [];

  before(async () => {
    service = await startService({ WORKERS: '2', RATE_LIMIT_PER_MINUTE: '1000' });
    browser = await launchBrowser({ clipboard: service.url });
    ({ page, console: watch } = await openPage(browser.context));
    page.on('request', (request) => {
      requestUrls.push(request.url());
      if (request.url().endsWith('/v1/pdf/generate')) generateBodies.push(request.postDataJSON() as Record<string, unknown>);
    });
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('serves the page and its files under a strict Content-Security-Policy; / redirects to it', async () => {
    const root = await fetch(`${service.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/playground');

    const res = await fetch(`${service.url}/playground`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = new Map(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name!, values]),
    );
    assert.deepEqual(directives.get('default-src'), ["'none'"]);
    assert.deepEqual(directives.get('script-src'), ["'self'"]);
    assert.deepEqual(directives.get('style-src'), ["'self'"]);
    assert.deepEqual(directives.get('connect-src'), ["'self'"]);
    assert.deepEqual(directives.get('worker-src'), ["'self'"]);
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');

    const html = await res.text();
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or event handler');
    const urls = [...html.matchAll(/\s(?:src|href)="([^"#]+)"/g)].map((m) => m[1]!);
    assert.ok(urls.length >= 3);
    for (const url of urls) assert.match(url, /^\/playground\//, `${url} is served by the service itself`);

    const script = urls.find((u) => /\/assets\/app-.*\.js$/.test(u))!;
    const asset = await fetch(`${service.url}${script}`, { headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.ok(asset.headers.get('content-security-policy'));

    const api = await fetch(`${service.url}/v1/fonts`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(api.headers.get('cache-control'), 'no-store', 'the API still says no-store');
    assert.equal(api.headers.get('content-security-policy'), null);

    const missingFile = await fetch(`${service.url}/playground/nothing-here.js`);
    assert.equal(missingFile.status, 404);
    assert.deepEqual(await missingFile.json(), { error: 'Not found' });
    for (const path of [
      '/playground/examples/../../package.json',
      '/playground/%2e%2e/%2e%2e/package.json',
      '/playground/assets/..%2f..%2fsrc/main.js',
    ]) {
      const escaping = await fetch(`${service.url}${path}`);
      assert.ok(escaping.status === 403 || escaping.status === 404, `${path}: ${escaping.status}`);
      assert.doesNotMatch(await escaping.text(), /"dependencies"|import /);
    }
  });

  it('opens with the report example; the typed key previews it and is kept in sessionStorage only', async () => {
    await page.goto(`${service.url}/`);
    assert.equal(new URL(page.url()).pathname, '/playground');
    const focused = await page.evaluate(() => document.activeElement?.dataset.testid);
    assert.equal(focused, 'api-key', 'without a key, the key field has the focus');
    const firstLine = (await editorLines(page, 'template-editor'))[0];
    assert.match(firstLine ?? '', /^\/\/ Report template/);
    assert.match((await editorLines(page, 'data-editor')).join('\n'), /"report_title"/);

    firstPreview = await loadWithKey(page, service.url, TEST_KEY);
    assert.equal(firstPreview.pages, 1, 'one canvas per page of the report');
    assert.ok(firstPreview.inked > 10_000, `the page has ink: ${firstPreview.inked} pixels`);
    assert.equal(await errorText(page), '');
    assert.match((await page.getByTestId('remaining').textContent()) ?? '', /^\d+ of 1000 requests left, resets in \d+ s$/);

    const stored = await page.evaluate(
      (name) => ({
        session: sessionStorage.getItem(name),
        local: localStorage.length,
        cookie: document.cookie,
      }),
      KEY_STORAGE,
    );
    assert.deepEqual(stored, { session: TEST_KEY, local: 0, cookie: '' });
    assert.ok(!page.url().includes(TEST_KEY));
    for (const url of requestUrls) assert.ok(!url.includes(TEST_KEY), `the key is in no URL: ${url}`);
    assert.ok(generateBodies.length >= 1);
  });

  it('names and marks an error on line 3, keeps the last good preview, and updates once it is fixed', async () => {
    const before = await settledPreview(page);
    await replaceLine(page, 'template-editor', 3, '#nonexistent-function()');
    const message = await waitForError(page, /line 3/);
    assert.match(message, /^Typst error on line 3, column 2: unknown variable: nonexistent-function/);

    const marked = page.getByTestId('template-editor').locator('.cm-error-line');
    assert.equal(await marked.count(), 1);
    assert.equal(await marked.getAttribute('data-problem-line'), '3');
    assert.equal(await marked.textContent(), '#nonexistent-function()');
    assert.equal(await page.getByTestId('template-editor').locator('.cm-error-mark').textContent(), 'n', 'column 2 is marked');
    assert.equal(await page.locator('#error-goto').textContent(), 'Go to line 3');

    const kept = await previewCanvases(page);
    assert.equal(kept.revision, before.revision, 'the last good preview stays');
    assert.equal(kept.hash, before.hash);
    assert.ok(kept.inked > 10_000);

    // Typst counts the column in characters, and an emoji is two of the editor's UTF-16 units.
    await replaceLine(page, 'template-editor', 3, '\u{1F600}\u{1F600}\u{1F600} #foo');
    assert.match(await waitForError(page, /column 6/), /^Typst error on line 3, column 6: unknown variable: foo/);
    assert.equal(await page.getByTestId('template-editor').locator('.cm-error-mark').textContent(), 'f', 'column 6 is marked');

    await replaceLine(page, 'template-editor', 3, '#set text(fill: blue)');
    const fixed = await waitForPreview(page, before.revision);
    assert.equal(await errorText(page), '');
    assert.equal(await page.getByTestId('template-editor').locator('.cm-error-line').count(), 0);
    assert.notEqual(fixed.hash, before.hash, 'the preview shows the change (blue text)');
  });

  it('shows the warnings of X-Typst-Warnings and marks their lines', async () => {
    const { revision } = await settledPreview(page);
    await replaceLine(page, 'template-editor', 4, '#set text(font: "Comic Sans MS")');
    await waitForPreview(page, revision);
    assert.match((await page.locator('#warnings').textContent()) ?? '', /^Warning: line 4(, column \d+)?: unknown font family/);
    assert.equal(await page.getByTestId('template-editor').locator('.cm-warning-line').getAttribute('data-problem-line'), '4');
    const again = await previewRevision(page);
    await replaceLine(page, 'template-editor', 4, '//');
    await waitForPreview(page, again);
    assert.equal(await page.locator('#warnings').isHidden(), true);
  });

  it('shows the warnings with their \\uXXXX escapes decoded, as the service writes non-ASCII text in the header', async () => {
    // The service's warnings are ASCII today; the header as it would carry other text is put on the real answer.
    const header = warningsHeader([{ line: 4, column: 2, message: 'Café « naïve » — 日本語 😀' }]);
    await page.route('**/v1/pdf/generate', async (route) => {
      const response = await route.fetch();
      const headers: Record<string, string> = { ...response.headers(), 'x-typst-warnings': header };
      delete headers['content-encoding'];
      delete headers['content-length'];
      await route.fulfill({ response, headers });
    });
    try {
      const { revision } = await settledPreview(page);
      await replaceLine(page, 'template-editor', 4, '// edited');
      await waitForPreview(page, revision);
      assert.equal(await page.locator('#warnings').textContent(), 'Warning: line 4, column 2: Café « naïve » — 日本語 😀');
      const marked = page.getByTestId('template-editor').locator('.cm-warning-line');
      assert.equal(await marked.getAttribute('data-problem-line'), '4');
    } finally {
      await page.unroute('**/v1/pdf/generate');
    }
    const again = await previewRevision(page);
    await replaceLine(page, 'template-editor', 4, '//');
    await waitForPreview(page, again);
    assert.equal(await page.locator('#warnings').isHidden(), true);
  });

  it("shows the data editor's own JSON errors, marked, and sends nothing until the data is fixed", async () => {
    const sent = generateBodies.length;
    const before = await previewCanvases(page);
    await replaceLine(page, 'data-editor', 2, '  "report_title": oops,');
    const dataError = page.locator('#data-error');
    await dataError.filter({ hasText: /not valid JSON/ }).waitFor();
    assert.match((await dataError.textContent()) ?? '', /^The data is not valid JSON: /);
    assert.equal(await page.getByTestId('data-editor').locator('.cm-error-line').getAttribute('data-problem-line'), '2');
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(generateBodies.length, sent, 'nothing is sent while the data is not JSON');
    assert.match((await page.locator('#status').textContent()) ?? '', /Fix the data/);

    // V8 counts JSON's columns in UTF-16 units, the marks count characters: after two emoji the mark is on the error.
    await replaceLine(page, 'data-editor', 2, '  "report_title": "\u{1F600}\u{1F600}" oops,');
    await dataError.filter({ hasText: /not valid JSON/ }).waitFor();
    await page.getByTestId('data-editor').locator('.cm-error-mark').filter({ hasText: /^o$/ }).waitFor();

    await replaceLine(page, 'data-editor', 2, '  "report_title": "A fixed title",');
    const fixed = await waitForPreview(page, before.revision);
    assert.equal(await dataError.textContent(), '');
    assert.equal(await page.getByTestId('data-editor').locator('.cm-error-line').count(), 0);
    assert.notEqual(fixed.hash, before.hash, 'the new title is drawn');
    assert.equal((generateBodies.at(-1)!.data as { report_title: string }).report_title, 'A fixed title');
  });

  it('reports a wrong key on the key field, and recovers with the right one', async () => {
    const key = page.getByTestId('api-key');
    const before = await previewRevision(page);
    await key.fill('not-the-key');
    await key.press('Enter');
    assert.equal(await waitForError(page, /API Key/), 'Missing or invalid API Key');
    assert.equal(await key.getAttribute('aria-invalid'), 'true');
    assert.equal(await previewRevision(page), before, 'the last good preview stays');
    await key.fill(TEST_KEY);
    await key.press('Enter');
    await waitForPreview(page, before);
    assert.equal(await errorText(page), '');
    assert.equal(await key.getAttribute('aria-invalid'), null);
  });

  it('lists dropped assets with their size, sends them base64 as `assets`, and removes them', async () => {
    const revision = await previewRevision(page);
    const sent = generateBodies.length;
    await dropFiles(page, [
      { name: 'marker.png', type: 'image/png', base64: MARKER_PNG.toString('base64') },
      { name: 'notes.txt', type: 'text/plain', base64: Buffer.from('hello').toString('base64') },
    ]);
    const items = page.getByTestId('assets').locator('li');
    await items.nth(1).waitFor();
    assert.deepEqual(await items.allTextContents(), [`marker.png${MARKER_PNG.length} BRemove`, 'notes.txt5 BRemove']);
    await waitForPreview(page, revision);
    const body = generateBodies.slice(sent).at(-1)!;
    assert.deepEqual(body.assets, { 'marker.png': MARKER_PNG.toString('base64'), 'notes.txt': 'aGVsbG8=' });

    await page.getByRole('button', { name: 'Remove notes.txt' }).click();
    assert.deepEqual(await items.allTextContents(), [`marker.png${MARKER_PNG.length} BRemove`]);
  });

  it('previews a dropped PNG asset that the template uses', async () => {
    const before = await previewCanvases(page);
    assert.equal(before.red, 0);
    await appendLine(page, 'template-editor', '#image("marker.png", width: 4cm)');
    // Typed a key at a time: a preview of the half-typed line can come first on a loaded machine.
    await waitForPreview(page, before.revision);
    const shown = await settledPreview(page);
    assert.equal(await errorText(page), '');
    assert.ok(shown.red > 5_000, `the red square is on the page: ${shown.red} red pixels`);
    assert.notEqual(shown.hash, before.hash);

    await page.getByRole('button', { name: 'Remove marker.png' }).click();
    assert.match(await waitForError(page, /marker\.png/), /file not found/);
    const withError = await previewRevision(page);
    await removeLastLine(page, 'template-editor');
    await waitForPreview(page, withError);
    assert.equal(await errorText(page), '');
  });

  it('loads the letter from the examples menu', async () => {
    await page.getByLabel('Example').selectOption('letter');
    // Drawn when the preview's page has US Letter's proportions (8.5 × 11 in; A4's are narrower).
    await page.waitForFunction(() => {
      const canvas = document.querySelector('[data-testid="preview"] canvas');
      return canvas && Math.abs(canvas.width / canvas.height - 8.5 / 11) < 0.01;
    });
    const letter = await previewCanvases(page);
    assert.match((await editorLines(page, 'template-editor'))[0] ?? '', /^\/\/ Business letter template/);
    assert.match((await editorLines(page, 'data-editor')).join('\n'), /"salutation"/);
    assert.equal(letter.pages, 1);
    assert.deepEqual(
      await page
        .getByTestId('assets')
        .locator('li')
        .allInnerTexts()
        .then((items: string[]) => items.map((t) => t.split(/\s/)[0])),
      ['letterhead.svg'],
      'the letter brings its logo',
    );
    assert.equal(await errorText(page), '');
  });

  it('loads the Japanese invoice from the examples menu, and previews it without an error', async () => {
    const before = await settledPreview(page);
    await page.getByLabel('Example').selectOption('invoice-ja');
    // Drawn when the preview's page has A4's proportions (210 × 297 mm).
    await page.waitForFunction(() => {
      const canvas = document.querySelector('[data-testid="preview"] canvas');
      return canvas && Math.abs(canvas.width / canvas.height - 210 / 297) < 0.01;
    });
    const invoice = await settledPreview(page);
    assert.ok(invoice.revision > before.revision);
    assert.match((await editorLines(page, 'template-editor'))[0] ?? '', /請求書/);
    assert.match((await editorLines(page, 'data-editor')).join('\n'), /株式会社さくら精機/);
    assert.equal(await page.getByTestId('assets').locator('li').count(), 0);
    assert.equal(await errorText(page), '');
    assert.ok(invoice.inked > 10_000, `the page has ink: ${invoice.inked} pixels`);
    // Back to the letter, where the tests below expect to be.
    await page.getByLabel('Example').selectOption('letter');
    await waitForPreview(page, invoice.revision);
    await settledPreview(page);
  });

  it('greys out the "Signed" switch, with the reason, on a service without a signing identity', async () => {
    await page.waitForFunction(() => document.querySelector('[data-testid="signed-note"]')?.textContent !== '');
    assert.equal(await page.getByTestId('signed').isDisabled(), true);
    assert.match((await page.getByTestId('signed-note').textContent()) ?? '', /no signing identity/);
  });

  it('switches the engine and the PDF standard, and opens the e-invoice on Typst 0.14 as PDF/A-3b', async () => {
    const lastBody = () => generateBodies.at(-1)!;
    let shown = await settledPreview(page);
    await page.getByTestId('engine').selectOption('0.14');
    shown = await waitForPreview(page, shown.revision);
    assert.equal(lastBody().typst, '0.14');
    assert.equal(lastBody().pdf, undefined);
    assert.equal(await errorText(page), '');
    await page.getByTestId('pdf-standard').selectOption('a-2b');
    shown = await waitForPreview(page, shown.revision);
    assert.deepEqual([lastBody().typst, lastBody().pdf], ['0.14', { standard: 'a-2b' }]);
    // Back to 0.11: the standard, a 0.14 option, is cleared.
    await page.getByTestId('engine').selectOption('0.11');
    shown = await waitForPreview(page, shown.revision);
    assert.equal(await page.getByTestId('pdf-standard').inputValue(), '');
    assert.deepEqual([lastBody().typst, lastBody().pdf], ['0.11', undefined]);
    // A standard chosen on 0.11 selects 0.14.
    await page.getByTestId('pdf-standard').selectOption('ua-1');
    assert.equal(await page.getByTestId('engine').inputValue(), '0.14');
    await settledPreview(page);

    await page.getByLabel('Example').selectOption('einvoice');
    await page.waitForFunction(() => /Factur-X/.test(document.querySelector('[data-testid="template-editor"]')?.textContent ?? ''));
    const invoice = await settledPreview(page);
    assert.equal(await page.getByTestId('engine').inputValue(), '0.14');
    assert.equal(await page.getByTestId('pdf-standard').inputValue(), 'a-3b');
    assert.deepEqual([lastBody().typst, lastBody().pdf], ['0.14', { standard: 'a-3b', einvoice: { profile: 'EN 16931' } }]);
    assert.match((await page.getByLabel('Example').locator('option:checked').textContent()) ?? '', /Factur-X EN 16931/);
    assert.equal(await errorText(page), '');
    assert.ok(invoice.inked > 10_000, `the page has ink: ${invoice.inked} pixels`);
    // Back to the letter, on the service's default engine, where the tests below expect to be.
    await page.getByLabel('Example').selectOption('letter');
    await waitForPreview(page, invoice.revision);
    await settledPreview(page);
    assert.equal(await page.getByTestId('engine').inputValue(), '');
    assert.equal(lastBody().typst, undefined);
  });

  it('lists the fonts of GET /v1/fonts and inserts one into the template', async () => {
    const fonts = page.getByLabel('Family');
    const names = await fonts.locator('option').evaluateAll((options: any[]) => options.map((o) => o.value));
    for (const family of ['Helvetica', 'Arimo', 'Times', 'Courier', 'Noto Sans']) assert.ok(names.includes(family), family);
    const revision = await previewRevision(page);
    await fonts.selectOption('Courier');
    await page.getByRole('button', { name: 'Insert' }).focus();
    await page.keyboard.press('Enter');
    assert.equal((await editorLines(page, 'template-editor'))[0], '#set text(font: "Courier")');
    await waitForPreview(page, revision);
    assert.equal(await errorText(page), '');
  });

  it('zooms the preview', async () => {
    const canvasWidth = () =>
      page
        .getByTestId('preview')
        .locator('canvas')
        .first()
        .evaluate((c: any) => c.style.width as string);
    let revision = await previewRevision(page);
    await page.getByLabel('Zoom', { exact: true }).selectOption('2');
    await waitForPreview(page, revision);
    assert.equal(await canvasWidth(), '1224px', 'US Letter (612 pt) at 200%');
    revision = await previewRevision(page);
    await page.getByRole('button', { name: 'Zoom out' }).click();
    await waitForPreview(page, revision);
    assert.equal(await canvasWidth(), '918px', '150%');
    revision = await previewRevision(page);
    await page.getByLabel('Zoom', { exact: true }).selectOption('fit');
    await waitForPreview(page, revision);
  });

  it('downloads the PDF, and copies a curl command that names $API_KEY, never the key, and works', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download PDF' }).click()]);
    assert.equal(download.suggestedFilename(), 'document.pdf');
    const pdf = await readFile((await download.path())!);
    assert.equal(pdf.subarray(0, 5).toString(), '%PDF-');

    await page.getByRole('button', { name: 'Copy as curl' }).click();
    await page.waitForFunction(() => /Copied/.test(document.getElementById('status')?.textContent ?? ''));
    const command: string = await page.evaluate(() => navigator.clipboard.readText());
    assert.match(command, /-H "Authorization: Bearer \$API_KEY"/);
    assert.ok(!command.includes(TEST_KEY), 'the real key is not in the command');
    assert.match(command, new RegExp(`^curl -X POST '${service.url}/v1/pdf/generate'`));

    if (!existsSync('/usr/bin/curl')) return; // the command's shape is checked above
    const dir = await mkdtemp(join(tmpdir(), 'playground-curl-'));
    try {
      execFileSync('bash', ['-c', command], { cwd: dir, env: { PATH: process.env.PATH ?? '', API_KEY: TEST_KEY }, stdio: 'pipe' });
      assert.equal(readFileSync(join(dir, 'document.pdf')).subarray(0, 5).toString(), '%PDF-');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('can be used by keyboard alone, and keeps the key across a reload of the tab', async () => {
    await page.reload();
    await waitForPreview(page);
    assert.equal(await page.getByTestId('api-key').inputValue(), TEST_KEY);

    const reached: string[] = [];
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press('Tab');
      reached.push(
        await page.evaluate(() => {
          const el = document.activeElement;
          return el.closest('[data-testid]')?.dataset.testid === 'template-editor' ||
            el.closest('[data-testid]')?.dataset.testid === 'data-editor'
            ? el.closest('[data-testid]').dataset.testid
            : (el.dataset?.testid ?? (el.id || el.className || el.tagName));
        }),
      );
    }
    for (const stop of [
      'example',
      'engine',
      'pdf-standard',
      'api-key',
      'forget-key',
      'download',
      'copy-curl',
      'template-editor',
      'data-editor',
      'choose-assets',
      'font-select',
      'insert-font',
      'zoom-out',
      'zoom',
      'zoom-in',
      'preview',
    ]) {
      assert.ok(reached.includes(stop), `Tab reaches ${stop}: ${reached.join(', ')}`);
    }
    assert.ok(reached.indexOf('data-editor') > reached.indexOf('template-editor'), 'Tab leaves the template editor');

    // The first Tab of a fresh load reaches the skip link, which goes straight to the preview.
    assert.equal(reached[0], 'skip-link');
    await page.reload();
    await waitForPreview(page);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'preview');
  });

  it('has no serious or critical axe-core violations, with and without an error shown', async () => {
    const serious = (violations: Awaited<ReturnType<typeof runAxe>>) =>
      violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    const clean = await runAxe(page);
    assert.deepEqual(serious(clean), [], JSON.stringify(clean, null, 2));

    await replaceLine(page, 'template-editor', 1, '#let broken = (');
    await waitForError(page, /Invalid Typst syntax on line 1/);
    const withError = await runAxe(page);
    assert.deepEqual(serious(withError), [], JSON.stringify(withError, null, 2));
    const minor = [...clean, ...withError].filter((v) => !serious([v]).length);
    if (minor.length > 0) console.log(`axe-core, moderate or minor: ${minor.map((v) => `${v.id} (${v.impact})`).join(', ')}`);
  });

  it('made no console error and no Content-Security-Policy violation', () => {
    assert.deepEqual(watch.problems(), []);
    // The browser logs each non-2xx answer of the API; these were the template errors the page showed.
    for (const line of watch.expected()) assert.match(line, /status of (400|401) .*\/v1\/pdf\/generate/);
  });
});

async function dropFiles(page: Page, files: Array<{ name: string; type: string; base64: string }>): Promise<void> {
  await page.evaluate((list) => {
    const transfer = new window.DataTransfer();
    for (const file of list) {
      const bytes = Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
      transfer.items.add(new window.File([bytes], file.name, { type: file.type }));
    }
    const zone = document.querySelector('[data-testid="assets"]');
    zone.dispatchEvent(new window.DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    zone.dispatchEvent(new window.DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  }, files);
}
