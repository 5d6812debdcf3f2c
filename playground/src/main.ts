/**
 * The template playground: edit a Typst template, its data and assets, and
 * see the PDF the service makes of them, refreshed as you type.
 *
 * Everything goes through the public API with the user's own key
 * (POST /v1/pdf/generate, GET /v1/fonts), so the page is authenticated and
 * rate-limited like any client and the service keeps nothing. The key stays
 * in this tab's sessionStorage.
 */
import { type TemplatePlace, templatePlace } from 'typst-pdf-client';
import { AssetPanel } from './assets.js';
import { CompileScheduler, type GenerateBody, type Outcome, type RateLimit } from './compile.js';
import { curlCommand } from './curl.js';
import { CodeEditor, type Problem } from './editors.js';
import { EngineMenus } from './engine.js';
import { SignedSwitch } from './signing.js';
import { DEFAULT_EXAMPLE, EXAMPLES, loadExample, type Example } from './examples.js';
import { FontPanel } from './fonts.js';
import { loadKey, saveKey } from './key.js';
import { jsonErrorPlace } from './json-error-place.js';
import { Preview, type Zoom } from './preview.js';

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`playground: #${id} is missing from the page`);
  return found as T;
}

const keyInput = element<HTMLInputElement>('api-key');
const forgetKey = element<HTMLButtonElement>('forget-key');
const exampleSelect = element<HTMLSelectElement>('example');
const remaining = element<HTMLElement>('remaining');
const statusLine = element<HTMLElement>('status');
const errorText = element<HTMLElement>('error');
const errorGoTo = element<HTMLButtonElement>('error-goto');
const warningList = element<HTMLUListElement>('warnings');
const dataError = element<HTMLElement>('data-error');
const downloadButton = element<HTMLButtonElement>('download');
const curlButton = element<HTMLButtonElement>('copy-curl');
const curlDialog = element<HTMLDialogElement>('curl-dialog');
const curlText = element<HTMLTextAreaElement>('curl-text');
const zoomSelect = element<HTMLSelectElement>('zoom');
const announcer = element<HTMLElement>('announce');

let lastPdf: Uint8Array<ArrayBuffer> | null = null;
let rateLimit: RateLimit | null = null;
let waitingUntil: number | null = null;
/** The parsed data editor, or null while it does not hold a JSON object. */
let dataValue: Record<string, unknown> | null = {};
let errorPlaceShown: TemplatePlace | null = null;

/** Marks the first time each step of the first preview happens, for the load test's breakdown. */
const marked = new Set<string>();
function markOnce(name: string): void {
  if (marked.has(name)) return;
  marked.add(name);
  performance.mark(`playground:${name}`);
}

markOnce('script-start');
// The default example's files, asked for at once (index.html preloaded them) while the editors are built.
const defaultExample = loadExample(DEFAULT_EXAMPLE);

function announce(message: string): void {
  announcer.textContent = message;
}

function setStatus(message: string): void {
  statusLine.textContent = message;
}

// --- the preview -------------------------------------------------------------

const previewElement = element<HTMLElement>('preview');
const preview = new Preview(previewElement, (pages) => {
  markOnce('first-preview');
  previewElement.setAttribute('aria-label', `Preview, ${pages} page${pages === 1 ? '' : 's'}`);
});

const ZOOMS: Zoom[] = ['fit', 0.5, 0.75, 1, 1.25, 1.5, 2, 3];
zoomSelect.replaceChildren(
  ...ZOOMS.map((zoom) => {
    const option = document.createElement('option');
    option.value = String(zoom);
    option.textContent = zoom === 'fit' ? 'Fit width' : `${Math.round(zoom * 100)}%`;
    return option;
  }),
);
function applyZoom(): void {
  const value = zoomSelect.value;
  preview.setZoom(value === 'fit' ? 'fit' : Number(value));
}
zoomSelect.addEventListener('change', applyZoom);
function stepZoom(step: number): void {
  const index = Math.min(Math.max(zoomSelect.selectedIndex + step, 1), ZOOMS.length - 1);
  // From "Fit width", either button goes to 100%.
  zoomSelect.selectedIndex = zoomSelect.selectedIndex === 0 ? ZOOMS.indexOf(1) : index;
  applyZoom();
}
element('zoom-out').addEventListener('click', () => stepZoom(-1));
element('zoom-in').addEventListener('click', () => stepZoom(1));

// --- the editors -------------------------------------------------------------

/** Set while an example replaces the editors' text: that change is compiled once, not once per editor. */
let loading: { template: string } | null = null;
const scheduleCompile = () => {
  if (!loading) scheduler.schedule();
};

const template = new CodeEditor({
  parent: element('template-editor'),
  label: 'Typst template',
  doc: '',
  language: 'typst',
  describedBy: 'error',
  onChange: scheduleCompile,
});

const data = new CodeEditor({
  parent: element('data-editor'),
  label: 'Data, a JSON object',
  doc: '{}',
  language: 'json',
  describedBy: 'data-error',
  onChange: () => {
    if (loading) return;
    checkData();
    scheduleCompile();
  },
});

/** Parses data text: the object, or the problem to show under the data editor and mark in it. */
function parseData(text: string): { value: Record<string, unknown> } | { problem: Problem } {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { value: value as Record<string, unknown> };
    return { problem: { severity: 'error', line: 1, column: null, message: 'The data must be a JSON object: { ... }' } };
  } catch (error) {
    const message = (error as Error).message;
    const place = jsonErrorPlace(message, text);
    return {
      problem: {
        severity: 'error',
        line: place?.line ?? 1,
        column: place?.column ?? null,
        message: `The data is not valid JSON: ${message}`,
      },
    };
  }
}

function checkData(): void {
  const parsed = parseData(data.text);
  dataValue = 'value' in parsed ? parsed.value : null;
  const problem = 'problem' in parsed ? parsed.problem : null;
  if (problem && problem.column === null && problem.message.startsWith('The data is not valid JSON')) {
    const place = data.firstSyntaxError();
    if (place) Object.assign(problem, place);
  }
  dataError.textContent = problem?.message ?? '';
  data.setProblems(problem ? [problem] : []);
}

markOnce('editors-built');

// --- assets and fonts --------------------------------------------------------

const assets = new AssetPanel(
  {
    zone: element('assets'),
    list: element('asset-list'),
    input: element('asset-input'),
    choose: element('choose-assets'),
    summary: element('asset-summary'),
  },
  scheduleCompile,
  announce,
);

const fonts = new FontPanel(
  element('font-select'),
  element('insert-font'),
  element('font-status'),
  (line) => template.insertLine(line),
  (limit) => showRateLimit(limit),
);

// A file dropped outside the assets panel and the editors must not make the browser leave the page.
window.addEventListener('dragover', (event) => {
  if (event.defaultPrevented || !event.dataTransfer?.types.includes('Files')) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = 'none';
});
window.addEventListener('drop', (event) => {
  if (!event.defaultPrevented) event.preventDefault();
});

// --- the key -----------------------------------------------------------------

keyInput.value = loadKey();
// A key takes effect when it is complete: pasted, or confirmed with Enter or by leaving the field.
// (Sending after every typed character would spend the address's requests on 401s.)
keyInput.addEventListener('input', (event) => {
  saveKey(keyInput.value.trim());
  keyInput.removeAttribute('aria-invalid');
  if ((event as InputEvent).inputType === 'insertFromPaste') scheduler.schedule(true);
});
keyInput.addEventListener('change', () => scheduler.schedule(true));
forgetKey.addEventListener('click', () => {
  keyInput.value = '';
  saveKey('');
  keyInput.focus();
  announce('The key was removed from this tab.');
  scheduler.schedule(true);
});

// --- rate limit --------------------------------------------------------------

function showRateLimit(limit: RateLimit): void {
  rateLimit = limit;
  renderRateLimit();
}

function renderRateLimit(): void {
  const now = Date.now();
  if (waitingUntil !== null) {
    const seconds = Math.max(0, Math.ceil((waitingUntil - now) / 1000));
    setStatus(`Rate limit reached: the preview waits ${seconds} s, then updates.`);
  }
  if (!rateLimit) return;
  const seconds = Math.ceil((rateLimit.resetAt - now) / 1000);
  const of = rateLimit.limit === null ? '' : ` of ${rateLimit.limit}`;
  remaining.textContent =
    seconds > 0
      ? `${rateLimit.remaining}${of} requests left, resets in ${seconds} s`
      : `${rateLimit.limit ?? rateLimit.remaining}${of} requests left (new window)`;
}
setInterval(renderRateLimit, 1000);

// --- compiling ---------------------------------------------------------------

function requestBody(): GenerateBody | { skip: string } {
  if (dataValue === null) return { skip: 'Fix the data (JSON) to update the preview.' };
  const files = assets.toRequest();
  const { typst, pdf } = engineMenus.fields();
  const signature = signedSwitch.signature();
  return {
    data: dataValue,
    template: loading?.template ?? template.text,
    ...(files ? { assets: files } : {}),
    ...(typst ? { typst } : {}),
    ...(pdf || signature ? { pdf: { ...pdf, ...signature } } : {}),
  };
}

function warningProblems(warnings: string[]): Problem[] {
  return warnings.flatMap((warning) => {
    const place = templatePlace(warning);
    return place ? [{ severity: 'warning' as const, line: place.line, column: place.column, message: warning }] : [];
  });
}

function showWarnings(warnings: string[]): void {
  warningList.replaceChildren(
    ...warnings.map((warning) => {
      const item = document.createElement('li');
      item.textContent = `Warning: ${warning}`;
      return item;
    }),
  );
  warningList.hidden = warnings.length === 0;
}

function showError(message: string): void {
  errorText.textContent = message;
  errorPlaceShown = message === '' ? null : templatePlace(message);
  errorGoTo.hidden = errorPlaceShown === null;
  if (errorPlaceShown) errorGoTo.textContent = `Go to line ${errorPlaceShown.line}`;
  previewElement.classList.toggle('stale', message !== '' && lastPdf !== null);
}

function onOutcome(outcome: Outcome): void {
  showWarnings(outcome.warnings);
  if (outcome.kind === 'pdf') {
    lastPdf = outcome.pdf;
    downloadButton.disabled = false;
    showError('');
    template.setProblems(warningProblems(outcome.warnings));
    keyInput.removeAttribute('aria-invalid');
    setStatus(`Compiled in ${outcome.ms} ms.`);
    preview.show(outcome.pdf).catch((error: unknown) => {
      showError(`The PDF could not be displayed: ${(error as Error).message}`);
    });
    void fonts.load(keyInput.value.trim());
    return;
  }
  showError(outcome.message);
  if (outcome.status === 401) keyInput.setAttribute('aria-invalid', 'true');
  const place = errorPlaceShown;
  template.setProblems([
    ...(place ? [{ severity: 'error' as const, line: place.line, column: place.column, message: outcome.message }] : []),
    ...warningProblems(outcome.warnings),
  ]);
  setStatus(lastPdf ? 'The template has an error; the preview shows the last good version.' : 'The template has an error.');
}

const scheduler = new CompileScheduler({
  body: () => (keyInput.value.trim() === '' ? { skip: 'Enter your API key to see the preview.' } : requestBody()),
  key: () => keyInput.value.trim(),
  onSending: () => {
    markOnce('request-sent');
    setStatus('Compiling…');
    previewElement.setAttribute('aria-busy', 'true');
  },
  onOutcome: (outcome) => {
    markOnce('answer');
    previewElement.removeAttribute('aria-busy');
    onOutcome(outcome);
  },
  onSkipped: (reason) => setStatus(reason),
  onRateLimit: showRateLimit,
  onWaiting: (until, status) => {
    previewElement.removeAttribute('aria-busy');
    waitingUntil = until;
    if (until === null) setStatus('Updating the preview…');
    else if (status === 503) setStatus('The service is busy: the preview waits, then updates.');
    else renderRateLimit();
  },
});

const engineMenus = new EngineMenus(element('engine'), element('pdf-standard'), () => scheduler.schedule(true));
const signedSwitch = new SignedSwitch(element('signed'), element('signed-note'), () => scheduler.schedule(true));

errorGoTo.addEventListener('click', () => {
  if (errorPlaceShown) template.goTo(errorPlaceShown.line, errorPlaceShown.column);
});

// --- download and curl -------------------------------------------------------

downloadButton.disabled = true;
downloadButton.addEventListener('click', () => {
  if (!lastPdf) return;
  const url = URL.createObjectURL(new Blob([lastPdf], { type: 'application/pdf' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = 'document.pdf';
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
});

curlButton.addEventListener('click', async () => {
  const body = requestBody();
  if ('skip' in body) {
    setStatus(body.skip);
    return;
  }
  const command = curlCommand(location.origin, JSON.stringify(body));
  try {
    await navigator.clipboard.writeText(command);
    announce('Copied the curl command; it reads the key from $API_KEY.');
    setStatus('Copied the curl command (the key is written as $API_KEY).');
  } catch {
    // No clipboard (a page served over plain HTTP from another host, or permission refused): show it to copy by hand.
    curlText.value = command;
    curlDialog.showModal();
    curlText.select();
  }
});
element('curl-close').addEventListener('click', () => curlDialog.close());

// --- examples ----------------------------------------------------------------

exampleSelect.replaceChildren(
  ...EXAMPLES.map((example) => {
    const option = document.createElement('option');
    option.value = example.id;
    option.textContent = example.label;
    return option;
  }),
);

async function openExample(example: Example, files = loadExample(example)): Promise<void> {
  exampleSelect.value = example.id;
  let loaded: Awaited<typeof files>;
  try {
    loaded = await files;
  } catch (error) {
    setStatus(`The example could not be loaded: ${(error as Error).message}`);
    return;
  }
  markOnce('example-loaded');
  // The request goes out first: CodeMirror takes a good 100 ms to lay out a new text, and the compile runs meanwhile.
  const parsed = parseData(loaded.data);
  dataValue = 'value' in parsed ? parsed.value : null;
  assets.replace(loaded.assets);
  engineMenus.set(example.typst, example.pdf?.standard, example.pdf?.einvoice);
  loading = { template: loaded.template };
  try {
    scheduler.schedule(true);
    template.setText(loaded.template);
    data.setText(loaded.data);
  } finally {
    loading = null;
  }
  checkData();
}

exampleSelect.addEventListener('change', () => {
  const example = EXAMPLES.find((e) => e.id === exampleSelect.value);
  if (example) void openExample(example).then(() => announce(`Loaded the ${example.label} example.`));
});

void openExample(DEFAULT_EXAMPLE, defaultExample);
if (keyInput.value === '') {
  setStatus('Enter your API key to see the preview.');
  keyInput.focus();
} else {
  void fonts.load(keyInput.value.trim());
}
