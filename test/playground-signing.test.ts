/**
 * The playground's "Signed" switch on a service with a signing identity:
 * usable, and a preview asked for with it is a signed PDF (the request
 * carries `pdf.signature`, the answer a signature pdfsig finds valid).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserMissing, launchBrowser, settledPreview, waitForPreview, type Browser } from './support/browser.js';
import { loadWithKey, openPage } from './support/playground.js';
import { pdfSignatures } from './support/poppler.js';
import { startService, TEST_KEY, type Service } from './support/service.js';
import { makeTestIdentity, type TestIdentity } from './support/signing-identity.js';

const missing = browserMissing();

describe('playground, signed', { skip: missing }, () => {
  let service: Service;
  let identity: TestIdentity;
  let browser: Browser;
  let page: Page;
  const answers: { body: Record<string, unknown>; pdf: Promise<Buffer> }[] = [];

  before(async () => {
    identity = makeTestIdentity();
    service = await startService({ WORKERS: '1', ...identity.env });
    browser = await launchBrowser();
    ({ page } = await openPage(browser.context));
    page.on('response', (response) => {
      if (!response.url().endsWith('/v1/pdf/generate') || response.status() !== 200) return;
      answers.push({ body: response.request().postDataJSON() as Record<string, unknown>, pdf: response.body() });
    });
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
    identity?.dispose();
  });

  it('asks for a signature when switched on, and the preview is a signed PDF', async () => {
    const first = await loadWithKey(page, service.url, TEST_KEY);
    await page.waitForFunction(() => !(globalThis as any).document.querySelector('[data-testid="signed"]').disabled);
    assert.equal(await page.getByTestId('signed-note').textContent(), '');
    await page.getByTestId('signed').check();
    await waitForPreview(page, first.revision);
    await settledPreview(page);
    const last = answers.at(-1)!;
    assert.deepEqual((last.body.pdf as Record<string, unknown>).signature, {});
    const [signature] = pdfSignatures(await last.pdf);
    assert.equal(signature!['Signature Validation'], 'Signature is Valid.');
  });
});
