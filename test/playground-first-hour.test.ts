/**
 * The playground fixes a newcomer asked for, in a real browser against the
 * real service: loading an example is no step of the undo history (type a
 * character, undo twice: the example stays); the "Third-party licences"
 * link is not drawn over the Assets panel at 1280×720 and 1440×900 (the
 * screenshots are kept in the test's temporary folder for a look); the
 * engine menu names the version of the service's default.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserMissing, launchBrowser, settledPreview, type Browser } from './support/browser.js';
import { editorLines, loadWithKey, openPage } from './support/playground.js';
import { startService, TEST_KEY, type Service } from './support/service.js';

declare const document: any;

const missing = browserMissing();
const REPORT_FIRST_LINES = readFileSync(new URL('../../examples/report.typ', import.meta.url), 'utf8')
  .split('\n')
  .slice(0, 3);

describe("playground, a newcomer's first hour", { skip: missing }, () => {
  let service: Service;
  let browser: Browser;
  let page: Page;
  let shots: string;
  before(async () => {
    shots = await mkdtemp(join(tmpdir(), 'playground-shots-'));
    service = await startService({ WORKERS: '1', PLAYGROUND: 'true', RATE_LIMIT_PER_MINUTE: '100000' });
    browser = await launchBrowser({ width: 1280, height: 720 });
    ({ page } = await openPage(browser.context));
    await loadWithKey(page, service.url, TEST_KEY);
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
    // Kept when asked, for a person to look at; removed otherwise.
    if (process.env.KEEP_SCREENSHOTS) process.stdout.write(`screenshots in ${shots}\n`);
    else await rm(shots, { recursive: true, force: true });
  });

  it('names the version of the service default in the engine menu', async () => {
    await page.waitForFunction(() => document.querySelector('#engine option')?.textContent !== 'Service default', undefined, {
      timeout: 5000,
    });
    const labels = await page.getByTestId('engine').locator('option').allTextContents();
    assert.deepEqual(labels, ['Service default (0.11.1)', '0.11', '0.14']);
  });

  for (const [width, height] of [
    [1280, 720],
    [1440, 900],
  ] as const) {
    it(`draws the licences link clear of the Assets panel at ${width}×${height}`, async () => {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => document.scrollingElement.scrollTo(0, document.scrollingElement.scrollHeight));
      const link = (await page.getByRole('link', { name: 'Third-party licences' }).boundingBox())!;
      const assets = (await page.getByTestId('assets').boundingBox())!;
      await page.screenshot({ path: join(shots, `licences-${width}x${height}.png`), fullPage: true });
      const overlaps =
        link.x < assets.x + assets.width &&
        assets.x < link.x + link.width &&
        link.y < assets.y + assets.height &&
        assets.y < link.y + link.height;
      assert.ok(!overlaps, `link ${JSON.stringify(link)} over the Assets panel ${JSON.stringify(assets)}`);
      // And it is where one looks for it: below everything else on the page.
      const lowest = await page.evaluate(() =>
        Math.max(...[...document.querySelectorAll('main section')].map((s: any) => s.getBoundingClientRect().bottom)),
      );
      assert.ok(link.y >= lowest, `the link (top ${link.y}) is below every panel (lowest bottom ${lowest})`);
    });
  }

  it('keeps the example when a character typed after loading it is undone, and undone once more', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.evaluate(() => document.scrollingElement.scrollTo(0, 0));
    // The report's preview at this size, to compare with the one after the undo.
    const report = await settledPreview(page);
    const before = await editorLines(page, 'template-editor');
    assert.deepEqual(before.slice(0, 3), REPORT_FIRST_LINES);
    await page.getByTestId('template-editor').locator('.cm-content').focus();
    await page.keyboard.press('Control+Home');
    await page.keyboard.type('x');
    assert.equal((await editorLines(page, 'template-editor'))[0], `x${REPORT_FIRST_LINES[0]}`);
    await page.keyboard.press('Control+z');
    await page.keyboard.press('Control+z');
    assert.deepEqual((await editorLines(page, 'template-editor')).slice(0, 3), REPORT_FIRST_LINES);
    assert.equal(await page.locator('#example').inputValue(), 'report');
    // The preview is the report's again, not a blank page.
    const preview = await settledPreview(page);
    assert.ok(preview.inked > 1000, `the page has ink (${preview.inked} pixels)`);
    assert.equal(preview.hash, report.hash);
  });
});
