/**
 * The fonts panel: the families of GET /v1/fonts (the same key and rate
 * limit as the preview), and a button that inserts `#set text(font: ...)`.
 */
import { rateLimitOf, type RateLimit } from './compile.js';

interface FontFamily {
  family: string;
  aliasOf: string | null;
}

export class FontPanel {
  private loadedFor = '';

  constructor(
    private readonly select: HTMLSelectElement,
    private readonly insert: HTMLButtonElement,
    private readonly status: HTMLElement,
    private readonly onInsert: (line: string) => void,
    private readonly onRateLimit: (limit: RateLimit) => void,
  ) {
    insert.addEventListener('click', () => {
      if (this.select.value) this.onInsert(`#set text(font: ${JSON.stringify(this.select.value)})`);
    });
    this.setEnabled(false);
  }

  /** Loads the list once per key. */
  async load(key: string): Promise<void> {
    if (key === '' || key === this.loadedFor) return;
    this.loadedFor = key;
    this.status.textContent = 'Loading fonts…';
    let families: FontFamily[];
    try {
      const response = await fetch('/v1/fonts', { headers: { authorization: `Bearer ${key}` }, cache: 'no-store', credentials: 'omit' });
      const limit = rateLimitOf(response);
      if (limit) this.onRateLimit(limit);
      if (!response.ok) {
        this.loadedFor = '';
        this.status.textContent = `Fonts could not be listed (${response.status}).`;
        return;
      }
      families = ((await response.json()) as { families: FontFamily[] }).families;
    } catch {
      this.loadedFor = '';
      this.status.textContent = 'Fonts could not be listed.';
      return;
    }
    this.select.replaceChildren(
      ...families.map(({ family, aliasOf }) => {
        const option = document.createElement('option');
        option.value = family;
        option.textContent = aliasOf ? `${family} (${aliasOf})` : family;
        return option;
      }),
    );
    this.status.textContent = `${families.length} families. Insert adds a line above the cursor.`;
    this.setEnabled(families.length > 0);
  }

  private setEnabled(enabled: boolean): void {
    this.select.disabled = !enabled;
    this.insert.disabled = !enabled;
  }
}
