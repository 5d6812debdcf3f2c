/**
 * The engine and PDF standard menus: which Typst a preview is compiled with
 * (`typst` in the request) and which PDF standard Typst 0.14 exports to
 * (`pdf.standard`). A standard needs the 0.14 engine: choosing one selects
 * 0.14, and choosing 0.11 clears the standard.
 */

/** The engines (value "" leaves the choice to the service's TYPST_VERSION). */
const ENGINES = [
  { value: '', label: 'Service default' },
  { value: '0.11', label: '0.11' },
  { value: '0.14', label: '0.14' },
];

/** Typst 0.14's PDF standards, as `--pdf-standard` names them. */
const STANDARDS = [
  { value: '', label: 'None' },
  { value: 'a-1b', label: 'PDF/A-1b' },
  { value: 'a-1a', label: 'PDF/A-1a' },
  { value: 'a-2b', label: 'PDF/A-2b' },
  { value: 'a-2u', label: 'PDF/A-2u' },
  { value: 'a-2a', label: 'PDF/A-2a' },
  { value: 'a-3b', label: 'PDF/A-3b' },
  { value: 'a-3u', label: 'PDF/A-3u' },
  { value: 'a-3a', label: 'PDF/A-3a' },
  { value: 'a-4', label: 'PDF/A-4' },
  { value: 'a-4f', label: 'PDF/A-4f' },
  { value: 'a-4e', label: 'PDF/A-4e' },
  { value: 'ua-1', label: 'PDF/UA-1' },
  { value: '1.4', label: 'PDF 1.4' },
  { value: '1.5', label: 'PDF 1.5' },
  { value: '1.6', label: 'PDF 1.6' },
  { value: '1.7', label: 'PDF 1.7' },
  { value: '2.0', label: 'PDF 2.0' },
];

function fill(select: HTMLSelectElement, options: { value: string; label: string }[]): void {
  select.replaceChildren(
    ...options.map(({ value, label }) => {
      const option = document.createElement('option');
      option.value = value;
      option.textContent = label;
      return option;
    }),
  );
}

/** An example's `pdf.einvoice`: the profile it declares, the XML's name (default `factur-x.xml`). */
export interface EinvoiceField {
  profile?: string;
  xml?: string;
}

export interface PdfField {
  standard?: string;
  einvoice?: EinvoiceField;
  /** Asked for by the "Signed" switch (signed-switch.ts), with either engine. */
  signature?: Record<string, never>;
}

export class EngineMenus {
  constructor(
    private readonly engine: HTMLSelectElement,
    private readonly standard: HTMLSelectElement,
    onChange: () => void,
  ) {
    fill(engine, ENGINES);
    fill(standard, STANDARDS);
    void this.nameDefault();
    engine.addEventListener('change', () => {
      if (engine.value !== '0.14') standard.value = '';
      onChange();
    });
    standard.addEventListener('change', () => {
      if (standard.value !== '') engine.value = '0.14';
      onChange();
    });
  }

  /** Names the default engine's version in its option, "Service default (0.11.1)", once the service has said which it is. */
  private async nameDefault(): Promise<void> {
    try {
      const response = await fetch('/playground/service.json', { credentials: 'omit' });
      const { typstDefault } = (await response.json()) as { typstDefault?: unknown };
      if (typeof typstDefault === 'string') this.engine.options[0]!.textContent = `Service default (${typstDefault})`;
    } catch {
      // The menu keeps its plain label.
    }
  }

  /** The open example's e-invoice (`pdf.einvoice`), sent while a PDF/A-3 standard is chosen. */
  private einvoice: EinvoiceField | undefined;

  /** What an example asks for (absent: the service's default engine, no standard, no e-invoice). */
  set(typst: string | undefined, standard: string | undefined, einvoice?: EinvoiceField): void {
    this.engine.value = typst ?? '';
    this.standard.value = standard ?? '';
    this.einvoice = einvoice;
  }

  /** The request's `typst` and `pdf` fields, when chosen. */
  fields(): { typst?: string; pdf?: PdfField } {
    const einvoice = this.einvoice && this.standard.value.startsWith('a-3') ? { einvoice: this.einvoice } : {};
    return {
      ...(this.engine.value ? { typst: this.engine.value } : {}),
      ...(this.standard.value ? { pdf: { standard: this.standard.value, ...einvoice } } : {}),
    };
  }
}
