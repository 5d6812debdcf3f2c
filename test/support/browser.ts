/**
 * Drives the Debian chromium package (never a downloaded browser) with
 * playwright-core, for the playground's tests and its screenshot.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

// The callbacks given to page.evaluate run in the browser; this program is type-checked without the
// DOM's types (they would change Node's globals for every file), so the page's globals are untyped here.
declare const document: any;
declare const window: any;

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the browser tests cannot run here, or undefined. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  if (process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs the chromium package`);
  return `${CHROMIUM} is missing (apt-get install chromium, or set CHROMIUM_PATH)`;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A browser with a fresh profile (its own --user-data-dir), removed on close. */
export async function launchBrowser(options: { width?: number; height?: number; clipboard?: string } = {}): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'playground-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: options.width ?? 1440, height: options.height ?? 900 },
    acceptDownloads: true,
    ...(options.clipboard ? { permissions: ['clipboard-read', 'clipboard-write'] } : {}),
  });
  if (options.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: options.clipboard });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export interface ConsoleWatch {
  /** Console errors, uncaught exceptions and Content-Security-Policy violations, as text. */
  problems(): string[];
  /** Failed-resource messages for answers the page expects and handles (e.g. 400 for a template error). */
  expected(): string[];
}

/**
 * Collects everything the page reports as an error. The browser also logs
 * "Failed to load resource: ... status of 400" for every API answer that is
 * not 2xx; those for the API's own error answers (which the page shows) are
 * kept apart in `expected()`.
 */
export async function watchConsole(page: Page, expectedApiStatuses: number[] = [400, 401, 429]): Promise<ConsoleWatch> {
  const problems: string[] = [];
  const expected: string[] = [];
  const apiFailure = new RegExp(`status of (${expectedApiStatuses.join('|')}) `);
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    const url = message.location().url ?? '';
    if (apiFailure.test(text) && /\/v1\//.test(url)) expected.push(`${text} (${url})`);
    else problems.push(`console: ${text} (${url})`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  await page.exposeFunction('__reportCspViolation', (text: string) => problems.push(`CSP: ${text}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event: any) => {
      window.__reportCspViolation(
        `${event.violatedDirective} blocked ${event.blockedURI || 'inline'} in ${event.sourceFile}:${event.lineNumber}`,
      );
    });
  });
  return { problems: () => [...problems], expected: () => [...expected] };
}

export interface CanvasSummary {
  pages: number;
  /** Pixels, over all pages, that are not white. */
  inked: number;
  /** Pixels whose colour is close to pure red (255, 0, 0). */
  red: number;
  /** A fingerprint of all pixels, to tell two previews apart. */
  hash: string;
  revision: number;
}

/** Reads the preview's canvases back from the page. */
export async function previewCanvases(page: Page): Promise<CanvasSummary> {
  return page.evaluate(() => {
    const preview = document.querySelector('[data-testid="preview"]');
    const canvases: any[] = [...preview.querySelectorAll('canvas')];
    let inked = 0;
    let red = 0;
    let hash = 2166136261;
    for (const canvas of canvases) {
      const pixels: Uint8ClampedArray = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < pixels.length; i += 4) {
        const [r, g, b] = [pixels[i]!, pixels[i + 1]!, pixels[i + 2]!];
        if (r < 250 || g < 250 || b < 250) inked++;
        if (r > 200 && g < 60 && b < 60) red++;
        hash = Math.imul(hash ^ (r | (g << 8) | (b << 16)), 16777619) >>> 0;
      }
    }
    return { pages: canvases.length, inked, red, hash: hash.toString(16), revision: Number(preview.dataset.revision ?? 0) };
  });
}

/** Waits until the preview has been redrawn past `revision` (or drawn at all). */
export async function waitForPreview(page: Page, revision = 0, timeout = 15_000): Promise<CanvasSummary> {
  await page.waitForFunction(
    (after) => Number(document.querySelector('[data-testid="preview"]')?.dataset.revision ?? 0) > after,
    revision,
    { timeout },
  );
  return previewCanvases(page);
}

/**
 * Waits until no preview is being compiled and none has arrived for `quietMs`
 * (typing a key can leave one more compile on its way), then reads it.
 */
export async function settledPreview(page: Page, quietMs = 800, timeout = 15_000): Promise<CanvasSummary> {
  const deadline = Date.now() + timeout;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const { revision, busy } = await page.evaluate(() => {
      const preview = document.querySelector('[data-testid="preview"]') as HTMLElement | null;
      return { revision: Number(preview?.dataset.revision ?? 0), busy: preview?.hasAttribute('aria-busy') ?? false };
    });
    if (revision !== last || busy) {
      last = revision;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return previewCanvases(page);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the preview did not settle within ${timeout} ms`);
}

const require = createRequire(import.meta.url);

/** Runs axe-core in the page (evaluated through the DevTools protocol, which the page's CSP does not govern). */
export async function runAxe(page: Page): Promise<Array<{ id: string; impact: string | null; help: string; nodes: string[] }>> {
  const source = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(source);
  return page.evaluate(async () => {
    type Violation = { id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> };
    const result: { violations: Violation[] } = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  });
}
