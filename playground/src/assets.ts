/**
 * Assets: files the template reads (`#image("logo.png")`), added by choosing
 * or dropping them, listed with their size, removable, and sent as the
 * request's `assets` object (name -> base64).
 */

export interface Asset {
  name: string;
  size: number;
  base64: string;
}

/** Base64 of bytes, in slices small enough for String.fromCharCode's argument list. */
function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export async function assetFromBlob(name: string, blob: Blob): Promise<Asset> {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  return { name, size: bytes.length, base64: toBase64(bytes) };
}

export interface AssetPanelElements {
  /** The drop zone (the whole panel). */
  zone: HTMLElement;
  list: HTMLUListElement;
  input: HTMLInputElement;
  choose: HTMLButtonElement;
  summary: HTMLElement;
}

export class AssetPanel {
  private readonly assets = new Map<string, Asset>();

  constructor(
    private readonly elements: AssetPanelElements,
    private readonly onChange: () => void,
    private readonly announce: (message: string) => void,
  ) {
    const { zone, input, choose } = elements;
    choose.addEventListener('click', () => input.click());
    input.addEventListener('change', () => {
      if (input.files) void this.addFiles([...input.files]);
      input.value = '';
    });
    zone.addEventListener('dragover', (event) => {
      if (!event.dataTransfer?.types.includes('Files')) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
      zone.classList.add('dragging');
    });
    zone.addEventListener('dragleave', (event) => {
      if (!zone.contains(event.relatedTarget as Node | null)) zone.classList.remove('dragging');
    });
    zone.addEventListener('drop', (event) => {
      event.preventDefault();
      zone.classList.remove('dragging');
      const files = event.dataTransfer?.files;
      if (files && files.length > 0) void this.addFiles([...files]);
    });
    this.render();
  }

  async addFiles(files: File[]): Promise<void> {
    const added = await Promise.all(files.map((file) => assetFromBlob(file.name, file)));
    for (const asset of added) this.assets.set(asset.name, asset);
    this.render();
    this.announce(`Added ${added.map((a) => a.name).join(', ')}`);
    this.onChange();
  }

  /** Replaces every asset (when an example is loaded). */
  replace(assets: Asset[]): void {
    this.assets.clear();
    for (const asset of assets) this.assets.set(asset.name, asset);
    this.render();
  }

  remove(name: string): void {
    this.assets.delete(name);
    this.render();
    this.announce(`Removed ${name}`);
    this.elements.choose.focus();
    this.onChange();
  }

  /** The request's `assets` field, or undefined when there are none. */
  toRequest(): Record<string, string> | undefined {
    if (this.assets.size === 0) return undefined;
    return Object.fromEntries([...this.assets.values()].map((asset) => [asset.name, asset.base64]));
  }

  private render(): void {
    const { list, summary } = this.elements;
    const items = [...this.assets.values()].sort((a, b) => a.name.localeCompare(b.name));
    list.replaceChildren(
      ...items.map((asset) => {
        const item = document.createElement('li');
        const name = document.createElement('span');
        name.className = 'asset-name';
        name.textContent = asset.name;
        const size = document.createElement('span');
        size.className = 'asset-size';
        size.textContent = formatBytes(asset.size);
        const remove = document.createElement('button');
        remove.type = 'button';
        remove.className = 'small';
        remove.textContent = 'Remove';
        remove.setAttribute('aria-label', `Remove ${asset.name}`);
        remove.addEventListener('click', () => this.remove(asset.name));
        item.append(name, size, remove);
        return item;
      }),
    );
    const total = items.reduce((sum, asset) => sum + asset.size, 0);
    summary.textContent =
      items.length === 0
        ? 'None. Drop files here, or choose them; the template reads them by name, e.g. #image("logo.png").'
        : `${items.length} file${items.length === 1 ? '' : 's'}, ${formatBytes(total)} (sent base64, about ${formatBytes(Math.ceil(total / 3) * 4)})`;
  }
}

/** A size as the page words it: 512 B, 3.4 KB, 1.25 MB. */
function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MB`;
}
