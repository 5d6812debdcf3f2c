#!/usr/bin/env node
/**
 * typst-pdf: the command-line client of the Typst PDF service.
 *
 *   typst-pdf render --template letter.typ --data letter.json --out letter.pdf
 *   typst-pdf render --template invoice.typ --typst 0.14 --pdf-standard a-3b
 *   typst-pdf render --template invoice.typ --einvoice-xml factur-x.xml --einvoice-profile "EN 16931"
 *   typst-pdf render --template letter.typ --asset letterhead.svg --multipart
 *   typst-pdf render --template contract.typ --sign-reason "Approved"
 *
 * The service's URL and API key come from --url / --api-key or from
 * TYPST_PDF_URL / TYPST_PDF_API_KEY. On failure it prints the service's
 * message (with the template line it names) and exits non-zero.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DEFAULT_MAX_RETRY_WAIT_MS,
  DEFAULT_RETRIES,
  DEFAULT_URL,
  EINVOICE_PROFILES,
  MAX_BODY_BYTES,
  type EinvoiceOptions,
  type EinvoiceProfile,
  PDF_STANDARDS,
  type PdfOptions,
  type PdfStandard,
  TYPST_ENGINES,
  type TypstEngine,
  TypstPdfError,
  generatePdf,
} from './index.js';
import { templateExcerpt } from './template-excerpt.js';

const NAME = 'typst-pdf';

/** Exit codes: the service refused or could not be reached (1), the command line or a local file is wrong (2). */
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

const USAGE = `Usage: ${NAME} render --template FILE [--data FILE] [--out FILE] [options]

Renders a Typst template with JSON data through the Typst PDF service.

  --template FILE    Typst template to render (required)
  --data FILE        JSON file with the data object (default: {}); - reads standard input
  --out FILE         where to write the PDF (default: the template's name with .pdf); - writes standard output
  --asset [NAME=]FILE  a file the template reads by NAME (default: the file's base name); repeatable
  --typst VERSION    Typst engine: 0.11 or 0.14 (default: the service's)
  --pdf-standard STD PDF standard (Typst 0.14): ${PDF_STANDARDS.join(', ')}
  --no-tagged        write an untagged PDF (Typst 0.14; tagged by default)
  --einvoice         make a Factur-X / ZUGFeRD e-invoice whose XML the template attaches as factur-x.xml (Typst 0.14)
  --einvoice-xml FILE  make an e-invoice of this CII XML (sent as an asset under its base name; Typst 0.14)
  --einvoice-profile P the e-invoice's profile: ${EINVOICE_PROFILES.join(', ')} (default: the one the XML declares)
  --multipart        send the files as files (a multipart form, no base64) instead of JSON
  --sign             have the service sign the PDF with its identity (either engine)
  --sign-reason TEXT the signature's reason, as a PDF reader shows it (implies --sign)
  --url URL          service URL (default: $TYPST_PDF_URL, else ${DEFAULT_URL})
  --api-key KEY      API key (default: $TYPST_PDF_API_KEY; prefer the variable, flags are visible to other users)
  --retries N        retries of a 429 or 503 answer (default: ${DEFAULT_RETRIES})
  --max-wait SECONDS most time spent waiting between retries, in total (default: ${DEFAULT_MAX_RETRY_WAIT_MS / 1000})
  --quiet            print nothing on success
  -h, --help         show this help
  -v, --version      show the version

Exit status: 0 on success, ${EXIT_FAILED} when the service refused the request or could not be reached, ${EXIT_USAGE} for a wrong command line or an unreadable local file.`;

class UsageError extends Error {}

/** The command line, strictly: an unknown flag is a usage error. */
function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      template: { type: 'string', short: 't' },
      data: { type: 'string', short: 'd' },
      out: { type: 'string', short: 'o' },
      asset: { type: 'string', short: 'a', multiple: true },
      typst: { type: 'string' },
      'pdf-standard': { type: 'string' },
      'no-tagged': { type: 'boolean' },
      einvoice: { type: 'boolean' },
      'einvoice-xml': { type: 'string' },
      'einvoice-profile': { type: 'string' },
      multipart: { type: 'boolean' },
      sign: { type: 'boolean' },
      'sign-reason': { type: 'string' },
      url: { type: 'string' },
      'api-key': { type: 'string' },
      retries: { type: 'string' },
      'max-wait': { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
}

async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    return usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${NAME} ${packageVersion()}\n`);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'render') {
    return usageError(positionals.length === 0 ? 'missing command (render)' : `unknown command: ${positionals.join(' ')}`);
  }

  let template: string;
  let data: Record<string, unknown>;
  let assets: Record<string, Uint8Array> | undefined;
  let retries: number;
  let maxWaitSeconds: number;
  let typst: TypstEngine | undefined;
  let pdfOptions: PdfOptions | undefined;
  try {
    typst = engine(values.typst);
    pdfOptions = pdfOptionsOf(values['pdf-standard'], values['no-tagged'], values.sign, values['sign-reason']);
    if (!values.template) throw new UsageError('--template is required');
    template = readText(values.template);
    data = values.data === undefined ? {} : readData(values.data);
    assets = values.asset === undefined ? undefined : readAssets(values.asset);
    const einvoice = einvoiceOf(values.einvoice, values['einvoice-xml'], values['einvoice-profile']);
    if (einvoice) {
      pdfOptions = { ...pdfOptions, einvoice: einvoice.options };
      typst ??= '0.14';
      if (einvoice.asset) assets = { ...assets, ...einvoice.asset };
    }
    retries = wholeNumber('--retries', values.retries, DEFAULT_RETRIES);
    maxWaitSeconds = wholeNumber('--max-wait', values['max-wait'], DEFAULT_MAX_RETRY_WAIT_MS / 1000);
  } catch (error) {
    return usageError((error as Error).message);
  }
  const out = values.out ?? `${basename(values.template, extname(values.template))}.pdf`;

  try {
    const { pdf, warnings } = await generatePdf(
      { data, template, assets, typst, pdf: pdfOptions },
      {
        url: values.url ?? (env.TYPST_PDF_URL || DEFAULT_URL),
        apiKey: values['api-key'] ?? env.TYPST_PDF_API_KEY,
        retries,
        maxRetryWaitMs: maxWaitSeconds * 1000,
        encoding: values.multipart ? 'multipart' : 'json',
        onRetry: ({ status, message, waitMs, attempt, maxAttempts }) =>
          process.stderr.write(
            `${NAME}: ${status} ${message} (retrying in ${(waitMs / 1000).toFixed(1)} s, attempt ${attempt} of ${maxAttempts})\n`,
          ),
      },
    );
    // Warnings are printed even with --quiet: the PDF was made, but not quite as written.
    for (const warning of warnings) {
      process.stderr.write(`${NAME}: warning: ${warning}\n`);
      const excerpt = templateExcerpt(warning, template);
      if (excerpt) process.stderr.write(`${excerpt}\n`);
    }
    if (out === '-') process.stdout.write(pdf);
    else writeFileSync(out, pdf);
    if (!values.quiet && out !== '-') process.stderr.write(`${NAME}: wrote ${out} (${pdf.byteLength} bytes)\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof TypstPdfError)) {
      // A URL or key that cannot be sent (generatePdf's TypeError, which quotes neither), or the output file not written.
      process.stderr.write(`${NAME}: ${(error as Error).message}\n`);
      return EXIT_USAGE;
    }
    const status = error.status === 0 ? '' : `${error.status} `;
    process.stderr.write(`${NAME}: ${status}${error.message}\n`);
    const excerpt = templateExcerpt(error.message, template);
    if (excerpt) process.stderr.write(`${excerpt}\n`);
    if (error.retryAfterSeconds !== undefined && (error.status === 429 || error.status === 503)) {
      process.stderr.write(`${NAME}: the service asks to retry after ${error.retryAfterSeconds} s\n`);
    }
    return EXIT_FAILED;
  }
}

function usageError(message: string): number {
  process.stderr.write(`${NAME}: ${message}\nRun '${NAME} --help' for usage.\n`);
  return EXIT_USAGE;
}

function readText(file: string): string {
  return readFile(file).toString('utf8');
}

/**
 * A local file's bytes (`-`: standard input). A file larger than the service
 * takes in a whole request is refused before it is read: it could only end
 * in the service's 413, after the CLI had held it several times over.
 */
function readFile(file: string): Buffer {
  try {
    if (file !== '-' && statSync(file).size > MAX_BODY_BYTES) {
      throw new UsageError(`${file} is larger than the service takes in a request (10 MB)`);
    }
    return readFileSync(file === '-' ? 0 : file);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** `--asset logo.png` or `--asset img/seal.svg=path/to/seal.svg`, read as bytes. */
function readAssets(specs: string[]): Record<string, Uint8Array> {
  const assets: Record<string, Uint8Array> = {};
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    const [name, file] = eq > 0 ? [spec.slice(0, eq), spec.slice(eq + 1)] : [basename(spec), spec];
    if (name in assets) throw new UsageError(`--asset ${name} is given twice`);
    assets[name] = readFile(file);
  }
  return assets;
}

function readData(file: string): Record<string, unknown> {
  const text = readText(file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`${file} must hold a JSON object (the template's data)`);
  }
  return value as Record<string, unknown>;
}

function engine(value: string | undefined): TypstEngine | undefined {
  if (value === undefined) return undefined;
  if (!(TYPST_ENGINES as readonly string[]).includes(value)) throw new UsageError(`--typst must be 0.11 or 0.14, got "${value}"`);
  return value as TypstEngine;
}

function pdfOptionsOf(
  standard: string | undefined,
  noTagged: boolean | undefined,
  sign: boolean | undefined,
  signReason: string | undefined,
): PdfOptions | undefined {
  if (standard === undefined && !noTagged && !sign && signReason === undefined) return undefined;
  const options: PdfOptions = {};
  if (sign || signReason !== undefined) options.signature = signReason === undefined ? {} : { reason: signReason };
  if (standard !== undefined) {
    if (!PDF_STANDARDS.includes(standard as PdfStandard)) {
      throw new UsageError(`--pdf-standard must be one of ${PDF_STANDARDS.join(', ')}, got "${standard}"`);
    }
    options.standard = standard as PdfStandard;
  }
  if (noTagged) options.tagged = false;
  return options;
}

/** `--einvoice`, `--einvoice-xml FILE`, `--einvoice-profile P`: the request's `pdf.einvoice`, and the XML as an asset. */
function einvoiceOf(
  asked: boolean | undefined,
  xml: string | undefined,
  profile: string | undefined,
): { options: EinvoiceOptions; asset?: Record<string, Uint8Array> } | undefined {
  if (!asked && xml === undefined && profile === undefined) return undefined;
  const options: EinvoiceOptions = {};
  if (profile !== undefined) {
    if (!EINVOICE_PROFILES.includes(profile as EinvoiceProfile)) {
      throw new UsageError(`--einvoice-profile must be one of ${EINVOICE_PROFILES.join(', ')}, got "${profile}"`);
    }
    options.profile = profile as EinvoiceProfile;
  }
  if (xml === undefined) return { options };
  options.xml = basename(xml);
  return { options, asset: readAssets([xml]) };
}

function wholeNumber(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number, got "${value}"`);
  return Number(value);
}

function packageVersion(): string {
  // dist/cli.js -> package.json at the package root.
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

process.exitCode = await main(process.argv.slice(2));
