/**
 * Makes the README's picture of the playground, docs/playground.png:
 * starts the service, opens the page in headless chromium with a key, lets
 * the report example preview, scrolls the template to its page setup, and
 * takes a screenshot. Run with `npm run screenshot`.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { browserMissing, launchBrowser, waitForPreview } from './browser.js';
import { KEY_STORAGE, openPage } from './playground.js';
import { startService, TEST_KEY } from './service.js';

const OUT = fileURLToPath(new URL('../../../docs/playground.png', import.meta.url));

const missing = browserMissing();
if (missing) {
  console.error(`screenshot: ${missing}`);
  process.exit(1);
}

const service = await startService({ WORKERS: '2' });
const browser = await launchBrowser({ width: 1440, height: 900 });
try {
  const { page, console: watch } = await openPage(browser.context);
  await page.addInitScript(([name, key]) => sessionStorage.setItem(name, key), [KEY_STORAGE, TEST_KEY] as const);
  await page.goto(`${service.url}/playground`);
  await waitForPreview(page);
  await page.getByLabel('Family').locator('option').first().waitFor({ state: 'attached' });
  // Show the template's page setup rather than its opening comment.
  await page
    .getByTestId('template-editor')
    .locator('.cm-scroller')
    .evaluate((scroller: any) => {
      const line = scroller.querySelector('.cm-line');
      scroller.scrollTop = line.getBoundingClientRect().height * 22;
    });
  await page.waitForTimeout(300);
  mkdirSync(new URL('.', `file://${OUT}`), { recursive: true });
  await page.screenshot({ path: OUT });
  if (watch.problems().length > 0) throw new Error(`the page reported: ${watch.problems().join('; ')}`);
  console.log(`screenshot: ${OUT}`);
} finally {
  await browser.close();
  await service.stop();
}
