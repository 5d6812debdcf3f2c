/**
 * Reads PDFs with the command-line tools a user would reach for
 * (poppler-utils and qpdf): text as copied out, XMP metadata, attached files,
 * fonts, the uncompressed object text, the first page's dictionary, signatures (`pdfsig`) and `qpdf --check`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function withFile<T>(bytes: Uint8Array, use: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'pdf-tools-'));
  const path = join(dir, 'document.pdf');
  try {
    writeFileSync(path, bytes);
    return use(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const run = (command: string, args: string[]) => execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

/** The text as `pdftotext` copies it out (UTF-8, pages separated by form feeds). */
export function pdfText(bytes: Uint8Array): string {
  return withFile(bytes, (path) => run('pdftotext', ['-enc', 'UTF-8', path, '-']));
}

/** The document's XMP metadata packet (`pdfinfo -meta`). */
export function pdfXmp(bytes: Uint8Array): string {
  return withFile(bytes, (path) => run('pdfinfo', ['-meta', path]));
}

/** `pdfdetach -list`: the names of the embedded files. */
export function pdfAttachments(bytes: Uint8Array): string[] {
  return withFile(bytes, (path) =>
    run('pdfdetach', ['-list', path])
      .split('\n')
      .slice(1)
      .map((line) => line.replace(/^\s*\d+:\s*/, '').trim())
      .filter(Boolean),
  );
}

/** The embedded file `name`'s bytes (`pdfdetach -savefile`). */
export function pdfAttachment(bytes: Uint8Array, name: string): Buffer {
  return withFile(bytes, (path) => {
    const out = `${path}.attachment`;
    run('pdfdetach', ['-savefile', name, '-o', out, path]);
    return readFileSync(out);
  });
}

/** `pdffonts`: the base names of the fonts, subset prefix removed. */
export function pdfFontNames(bytes: Uint8Array): string[] {
  return withFile(bytes, (path) =>
    run('pdffonts', [path])
      .split('\n')
      .slice(2)
      .map((line) => line.split(/\s+/)[0]!.replace(/^[A-Z]{6}\+/, ''))
      .filter(Boolean),
  );
}

/** The PDF with its streams uncompressed and no object streams (`qpdf --qdf`), as Latin-1 text. */
export function pdfObjects(bytes: Uint8Array): string {
  return withFile(bytes, (path) =>
    execFileSync('qpdf', ['--qdf', '--object-streams=disable', path, '-'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString('latin1'),
  );
}

type PdfDictionary = Record<string, unknown>;

/** The first page's dictionary and its annotations' dictionaries, as qpdf's JSON gives them. */
export function pdfFirstPage(pdf: Uint8Array): { page: PdfDictionary; annotations: PdfDictionary[] } {
  const json = withFile(pdf, (path) => execFileSync('qpdf', ['--json=2', '--json-key=pages', '--json-key=qpdf', path]).toString());
  const { pages, qpdf } = JSON.parse(json) as { pages: { object: string }[]; qpdf: [unknown, Record<string, { value: PdfDictionary }>] };
  const object = (ref: string) => qpdf[1][`obj:${ref}`]!.value;
  const page = object(pages[0]!.object);
  return { page, annotations: ((page['/Annots'] as string[] | undefined) ?? []).map(object) };
}

/** What `pdfsig` reports of each signature (its exit status aside: it is not 0 for an invalid one), as `key: value` lines. */
export function pdfSignatures(bytes: Uint8Array): Record<string, string>[] {
  return withFile(bytes, (path) => {
    const result = spawnSync('pdfsig', [path], { encoding: 'utf8' });
    const signatures: Record<string, string>[] = [];
    for (const line of result.stdout.split('\n')) {
      if (/^Signature #\d+:/.test(line)) signatures.push({});
      const field = /^\s+- ([^:]+): (.*)$/.exec(line);
      if (field && signatures.length > 0) signatures[signatures.length - 1]![field[1]!] = field[2]!;
      else if (/^\s+- /.test(line) && signatures.length > 0) signatures[signatures.length - 1]![line.replace(/^\s+- /, '').trim()] = 'yes';
    }
    return signatures;
  });
}

/** `qpdf --check`: its exit status and what it printed. */
export function qpdfCheck(bytes: Uint8Array): { status: number | null; output: string } {
  return withFile(bytes, (path) => {
    const result = spawnSync('qpdf', ['--check', path], { encoding: 'utf8' });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  });
}
