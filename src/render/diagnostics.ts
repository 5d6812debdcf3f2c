/**
 * Turns Typst's diagnostics into what the client is told: line and column
 * in the template (or, for `data`, the request body) as sent, and messages
 * that never show a server path. Every place in an error is computed here.
 */
import type { TemplateFailure } from '../api-values.js';
import { DIAGNOSTIC_MESSAGES, dataPlaceInBody, fileNotFound, fileNotFoundInPackage, packageUnavailable } from '../messages.js';
import { offsetOf, placeOf } from '../bytes/text-position.js';
import { nameProblem } from '../bytes/asset-names.js';

/** A diagnostic as `NodeCompiler.fetchDiagnostics` returns it (0-based positions). */
export interface RawDiagnostic {
  message: string;
  path?: string;
  package?: string;
  range: { start: { line: number; column: number }; end: { line: number; column: number } } | null;
  /** LSP severities: 1 error, 2 warning, 3 information, 4 hint (Typst's "while calling" traces). */
  severity: number;
}

export const SEVERITY_ERROR = 1;

export interface Positioning {
  /** Lines the service puts before the template in the main file. */
  prefixLines: number;
  /** Paths to strip from messages (the virtual root, the workers' package directory). */
  hiddenPaths: string[];
  /** The workers' package directory (sandbox.ts): a file Typst searched there is a package's. */
  packageDirectory?: string;
  /** The file `data` is read from: Typst 0.14 reports a JSON error there (with no range), 0.11 on the prefix line. */
  dataPath?: string;
}

/** The text the client sent, to place an error in it. */
export interface SentText {
  /** The template, unescaped, without its byte order mark. */
  source: Buffer;
  /** Whether the template started with a byte order mark (dropped before compiling). */
  hadBom: boolean;
  /** The request body, and where `data` starts in it. */
  body: Uint8Array;
  dataStart: number;
}

/** `text` without the server's paths (each is the service's own, and the package directory's name is random). */
function withoutPaths(text: string, hiddenPaths: string[]): string {
  let shown = text;
  for (const hidden of hiddenPaths) shown = shown.split(hidden).join('');
  return shown;
}

/** Removes server paths and advice that only applies to Typst's command line. */
function cleanMessage(message: string, hiddenPaths: string[]): string {
  let text = withoutPaths(message, hiddenPaths);
  // A package outside PACKAGE_PATH: Typst tried to download it (and could not), or found no such local package.
  const download = /failed to download package \(.*?\/([a-z0-9_-]+)\/([a-z0-9_-]+)-(\d+\.\d+\.\d+)\.tar\.gz[^)]*\).*$/i.exec(text);
  if (download) {
    const [, namespace, name, version] = download;
    text = packageUnavailable(`@${namespace}/${name}:${version}`);
  }
  const notFound = /^package not found \(searched for (@[a-z0-9_-]+\/[a-z0-9_-]+:\d+\.\d+\.\d+)\)/i.exec(text);
  if (notFound) text = packageUnavailable(notFound[1]!);
  return text
    .replace(/,? ?you can adjust the project root with the --root argument/g, '')
    .replace(/, hints: /g, DIAGNOSTIC_MESSAGES.hints)
    .trim();
}

/** 1-based line of the template, or null when the span lies outside it. */
function templateLine(d: RawDiagnostic, prefixLines: number): number | null {
  if (!d.range) return null;
  const line = d.range.start.line - prefixLines + 1;
  return line >= 1 ? line : null;
}

/** Main files of the service (engine.ts): their names start with `~`, which no asset name may hold. */
const isMainFile = (path: string | undefined) => path === undefined || path === '' || path.startsWith('/~');

/** The longest message of Typst's an answer quotes, in characters. */
const MESSAGE_CHARS = 4096;

const FILE_NOT_FOUND = /^file not found \(searched at (.*)\)$/s;

/**
 * "file not found (searched at /logo.png)" says where the service looked,
 * which is of no use to a client: the answer names the file as the template
 * wrote it, and says how files reach a template. A file Typst searched in
 * the package directory is named in its package, whichever file asked for
 * it (a package's own, a package it imports, or the template importing a
 * package that lacks its entry point): no asset can stand in for it.
 * `message` is Typst's, paths and all.
 */
function missingFile(message: string, written: string | undefined, pos: Positioning): string | undefined {
  const where = FILE_NOT_FOUND.exec(message)?.[1];
  if (where === undefined) return undefined;
  const packaged = packageFile(where, pos.packageDirectory);
  if (packaged) return fileNotFoundInPackage(packaged.spec, packaged.path);
  const searched = withoutPaths(where, pos.hiddenPaths);
  const path = written ?? searched.replace(/^\//, '');
  const fromNetwork = /^[a-z][a-z0-9+.-]*:\/{0,2}/i.test(path) || path.startsWith('//');
  // The hint shows the path as an asset's name, unless no asset could have that name (`~/x`, `a\b`).
  const asName = searched.replace(/^\/+/, '');
  const example = asName && nameProblem(Buffer.from(asName)) === null ? asName : DIAGNOSTIC_MESSAGES.exampleAsset;
  return fileNotFound(path, fromNetwork ? undefined : example);
}

/** A path in the package directory, as its package (`@namespace/name:version`: where it lies) and the path from that package's root. */
function packageFile(path: string, directory: string | undefined): { spec: string; path: string } | undefined {
  if (!directory || !path.startsWith(`${directory}/`)) return undefined;
  const parts = /^([^/]+)\/([^/]+)\/([^/]+)\/(.*)$/s.exec(path.slice(directory.length + 1));
  return parts ? { spec: `@${parts[1]}/${parts[2]}:${parts[3]}`, path: parts[4]! } : undefined;
}

/**
 * Typst's message, cut after MESSAGE_CHARS characters: a template's own
 * `panic` or `assert` message can be as long as its memory allows, and a
 * 400 should stay an error, not a second document.
 */
function cutMessage(message: string): string {
  let units = 0;
  for (let chars = 0; units < message.length; chars++) {
    if (chars === MESSAGE_CHARS) return message.slice(0, units) + DIAGNOSTIC_MESSAGES.cut(MESSAGE_CHARS);
    units += message.codePointAt(units)! > 0xffff ? 2 : 1;
  }
  return message;
}

/**
 * Picks the first error, words it and places it in what the client sent.
 * `hasSyntaxErrors` tells whether the template failed to parse (Typst
 * evaluates nothing then, so every error is a syntax error) or parsed and
 * failed while running.
 */
export function toFailure(diags: RawDiagnostic[], hasSyntaxErrors: boolean, pos: Positioning, sent: SentText): TemplateFailure {
  const errors = diags.filter((d) => d.severity === SEVERITY_ERROR);
  const first = errors[0] ?? diags[0];
  if (!first) return { kind: 'evaluation', message: DIAGNOSTIC_MESSAGES.none, line: null, column: null };
  const cleaned = cleanMessage(first.message, pos.hiddenPaths);
  // Typst names a package's files from the package's root, with the package apart: `@preview/name:1.0.0`, `/lib.typ`.
  const pkg = first.package || undefined;
  const inMain = !pkg && isMainFile(first.path);
  const written = inMain && first.range ? quotedPath(sent.source, first.range, pos.prefixLines) : undefined;
  const message = cutMessage(missingFile(first.message, written, pos) ?? cleaned);
  // A span on the service's own prefix line, or an error in the data file itself, means Typst could not read `data`.
  if (
    (inMain && first.range && first.range.start.line < pos.prefixLines) ||
    (!pkg && pos.dataPath !== undefined && first.path === pos.dataPath)
  ) {
    return { kind: 'data', message: placeDataError(message, sent) };
  }
  // An error inside a file the template included (an asset): its own lines, and its name.
  const line = inMain ? templateLine(first, pos.prefixLines) : first.range ? first.range.start.line + 1 : null;
  const column = line === null || !first.range ? null : first.range.start.column + 1;
  return {
    kind: hasSyntaxErrors ? 'syntax' : 'evaluation',
    message,
    line,
    // Columns on line 1 count the dropped byte order mark, as the template was sent.
    column: column !== null && inMain && line === 1 && sent.hadBom ? column + 1 : column,
    ...(inMain || !first.path ? {} : { file: pkg ? pkg + first.path : first.path.replace(/^\//, '') }),
  };
}

/**
 * Typst reads `data` from its own file, so a JSON error's "line L column C"
 * counts from the start of the `data` value; the client sent the whole
 * body, so the place is given in the body as sent.
 */
function placeDataError(message: string, sent: SentText): string {
  return message.replace(/at line (\d+) column (\d+)/, (_all, line: string, column: string) => {
    const start = placeOf(sent.body, sent.dataStart);
    const inData = { line: Number(line), column: Number(column) };
    return dataPlaceInBody(
      inData.line === 1
        ? { line: start.line, column: start.column + inData.column - 1 }
        : { line: start.line + inData.line - 1, column: inData.column },
    );
  });
}

/**
 * The path a template wrote as the string literal at `range` (main-file
 * coordinates), for the message of a file that is not there; undefined when
 * the span is not a literal (a path built at run time). Error path only:
 * the message quotes the template anyway.
 */
function quotedPath(source: Buffer, range: NonNullable<RawDiagnostic['range']>, prefixLines: number): string | undefined {
  const line = range.start.line - prefixLines;
  if (line < 0 || range.end.line !== range.start.line) return undefined;
  const start = offsetOf(source, line, range.start.column);
  const end = offsetOf(source, line, range.end.column);
  const text = source.toString('utf8', start, end);
  return /^"(?:[^"\\]|\\.)*"$/.test(text) ? text.slice(1, -1).replace(/\\(["\\])/g, '$1') : undefined;
}
