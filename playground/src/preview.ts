/**
 * The preview: every page of the newest PDF drawn by pdf.js, one canvas per
 * page, at the chosen zoom. A new document is drawn off screen and swapped
 * in whole, so the preview never mixes pages of two answers and the last
 * good one stays until a newer one is ready.
 */
import type { PDFDocumentProxy, PDFWorker, RenderTask } from 'pdfjs-dist';

/** The worker's URL under /playground/assets/, content-hashed; set by the build (scripts/build-playground.mjs). */
declare const PDF_WORKER_URL: string;

type PdfJs = typeof import('pdfjs-dist');

/**
 * pdf.js's worker (1.3 MB of script to compile) is started as soon as this
 * module runs, before the editors are built, so that it is ready by the time
 * the first PDF arrives. pdf.js itself is a chunk of its own, loaded while the
 * editors are set up and the first compile runs; it is handed the worker.
 */
const workerPort = new Worker(PDF_WORKER_URL, { type: 'module', name: 'pdf.js' });

function loadPdfJs(): Promise<{ pdfjs: PdfJs; worker: PDFWorker }> {
  return import('pdfjs-dist').then((pdfjs) => ({ pdfjs, worker: pdfjs.PDFWorker.fromPort({ port: workerPort }) }));
}

export type Zoom = number | 'fit';

export class Preview {
  /** Started at once, so the worker loads while the first PDF is being compiled. */
  private readonly pdf = loadPdfJs();
  private loadGeneration = 0;
  private drawGeneration = 0;
  /** The newest document loaded; the one to draw. */
  private wanted: PDFDocumentProxy | null = null;
  /** The document whose pages are on screen. */
  private shown: PDFDocumentProxy | null = null;
  private task: RenderTask | null = null;
  private zoom: Zoom = 'fit';
  private drawnWidth = 0;
  private revision = 0;

  constructor(
    private readonly container: HTMLElement,
    private readonly onDrawn: (pages: number) => void,
  ) {
    let resizeTimer: ReturnType<typeof setTimeout> | undefined;
    new ResizeObserver(() => {
      if (this.zoom !== 'fit' || Math.abs(this.availableWidth() - this.drawnWidth) < 8) return;
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => void this.draw(), 150);
    }).observe(container);
  }

  get pageCount(): number {
    return this.shown?.numPages ?? 0;
  }

  /** Loads and draws a PDF; resolves false when a newer one came first. */
  async show(pdf: Uint8Array): Promise<boolean> {
    const generation = ++this.loadGeneration;
    const { pdfjs, worker } = await this.pdf;
    // pdf.js takes ownership of the bytes it is given: give it a copy, the caller keeps the PDF for download.
    const doc = await pdfjs.getDocument({
      data: pdf.slice(),
      worker,
      isEvalSupported: false, // the page's CSP allows no eval; pdf.js would try it to compile fonts
      verbosity: pdfjs.VerbosityLevel.ERRORS,
      enableXfa: false,
    }).promise;
    if (generation !== this.loadGeneration) {
      void doc.destroy();
      return false;
    }
    const previous = this.wanted;
    this.wanted = doc;
    if (previous && previous !== this.shown) void previous.destroy();
    return this.draw();
  }

  setZoom(zoom: Zoom): void {
    this.zoom = zoom;
    void this.draw();
  }

  private availableWidth(): number {
    return Math.max(this.container.clientWidth - 32, 100);
  }

  private async draw(): Promise<boolean> {
    const doc = this.wanted;
    if (!doc) return false;
    const generation = ++this.drawGeneration;
    const { pdfjs } = await this.pdf;
    this.task?.cancel();
    const width = this.availableWidth();
    const ratio = window.devicePixelRatio || 1;
    const canvases: HTMLCanvasElement[] = [];
    try {
      for (let number = 1; number <= doc.numPages; number++) {
        const page = await doc.getPage(number);
        if (generation !== this.drawGeneration) return false;
        const natural = page.getViewport({ scale: 1 });
        const scale = this.zoom === 'fit' ? Math.min(Math.max(width / natural.width, 0.25), 4) : this.zoom;
        const viewport = page.getViewport({ scale: scale * ratio });
        const canvas = document.createElement('canvas');
        canvas.width = Math.floor(viewport.width);
        canvas.height = Math.floor(viewport.height);
        canvas.style.width = `${Math.floor(viewport.width / ratio)}px`;
        canvas.style.height = `${Math.floor(viewport.height / ratio)}px`;
        canvas.setAttribute('role', 'img');
        canvas.setAttribute('aria-label', `Page ${number} of ${doc.numPages}`);
        const context = canvas.getContext('2d', { alpha: false })!;
        this.task = page.render({ canvasContext: context, viewport });
        await this.task.promise;
        page.cleanup();
        canvases.push(canvas);
      }
    } catch (error) {
      if (error instanceof pdfjs.RenderingCancelledException || generation !== this.drawGeneration) return false;
      throw error;
    }
    if (generation !== this.drawGeneration) return false;
    this.task = null;
    this.drawnWidth = width;
    this.container.replaceChildren(...canvases);
    this.container.dataset.revision = String(++this.revision);
    if (this.shown && this.shown !== doc) void this.shown.destroy();
    this.shown = doc;
    this.onDrawn(doc.numPages);
    return true;
  }
}
