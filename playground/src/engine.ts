/**
 * The engine and PDF standard menus: which Typst a preview is compiled with
 * (`typst` in the request) and which PDF standard Typst 0.14 exports to
 * (`pdf.standard`). A standard needs the 0.14 engine: choosing one selects
 * 0.14, and choosing 0.11 clears the standard.
 */
import { PDF_STANDARDS, type PdfStandard } from 'typst-pdf-client';

/** The engines (value "" leaves the choice to the service's TYPST_VERSION). */
const ENGINES = [
  { value: '', label: 'Service default' },
  { value: '0.11', label: '0.11' },
  { value: '0.14', label: '0.14' },
];

/** How the menu names a standard: PDF/A-2b, PDF/UA-1, PDF 1.7. */
function standardLabel(standard: PdfStandard): string {
  if (standard.startsWith('a-')) return `PDF/A-${standard.slice(2)}`;
  if (standard.startsWith('ua-')) return `PDF/UA-${standard.slice(3)}`;
  return `PDF ${standard}`;
}

/** Typst 0.14's PDF standards, as `--pdf-standard` names them: the archival and accessible ones first, then the versions. */
const STANDARDS = [
  { value: '', label: 'None' },
  ...[...PDF_STANDARDS.filter((s) => !/^\d/.test(s)), ...PDF_STANDARDS.filter((s) => /^\d/.test(s))].map((value) => ({
    value,
    label: standardLabel(value),
  })),
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
  /** Asked for by the "Signed" switch (signing.ts), with either engine. */
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
