/**
 * Steps a person takes in the playground, for the browser tests: open it,
 * give the key, edit a line of an editor, wait for the next answer.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { waitForPreview, watchConsole, type CanvasSummary, type ConsoleWatch } from './browser.js';

declare const document: any;

export const KEY_STORAGE = 'typst-pdf-playground.api-key';

export async function openPage(context: BrowserContext): Promise<{ page: Page; console: ConsoleWatch }> {
  const page = context.pages()[0] ?? (await context.newPage());
  const console = await watchConsole(page);
  return { page, console };
}

/** Loads the page, types the key as a person would and confirms it with Enter; resolves with the first preview. */
export async function loadWithKey(page: Page, url: string, key: string): Promise<CanvasSummary> {
  await page.goto(`${url}/playground`);
  const field = page.getByTestId('api-key');
  await field.click();
  await page.keyboard.type(key);
  await page.keyboard.press('Enter');
  return waitForPreview(page);
}

/** The text of the lines an editor shows (CodeMirror draws only the lines in and near view). */
export async function editorLines(page: Page, testId: string): Promise<string[]> {
  return page.getByTestId(testId).locator('.cm-line').allTextContents();
}

/** Puts the cursor on a shown line of an editor, selects the whole line and types `text` in its place. */
export async function replaceLine(page: Page, testId: string, line: number, text: string): Promise<void> {
  await page
    .getByTestId(testId)
    .locator('.cm-line')
    .nth(line - 1)
    .click();
  await page.keyboard.press('Alt+l'); // CodeMirror's selectLine: the line and its line break
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

/** Goes to the end of the text and types a new last line. */
export async function appendLine(page: Page, testId: string, text: string): Promise<void> {
  await page.getByTestId(testId).locator('.cm-content').focus();
  await page.keyboard.press('Control+End');
  await page.keyboard.press('Enter');
  await page.keyboard.type(text);
}

/** Deletes the last line (the one appendLine added). */
export async function removeLastLine(page: Page, testId: string): Promise<void> {
  await page.getByTestId(testId).locator('.cm-content').focus();
  await page.keyboard.press('Control+End');
  await page.keyboard.press('Shift+Home');
  await page.keyboard.press('Backspace');
  await page.keyboard.press('Backspace');
}

export async function errorText(page: Page): Promise<string> {
  return (await page.getByTestId('error').textContent()) ?? '';
}

/** Waits until the error area holds text matching `pattern`. */
export async function waitForError(page: Page, pattern: RegExp, timeout = 15_000): Promise<string> {
  await page.waitForFunction(
    ([source, flags]) => new RegExp(source, flags).test(document.querySelector('[data-testid="error"]')?.textContent ?? ''),
    [pattern.source, pattern.flags] as const,
    { timeout },
  );
  return errorText(page);
}

export async function previewRevision(page: Page): Promise<number> {
  return Number((await page.getByTestId('preview').getAttribute('data-revision')) ?? 0);
}
