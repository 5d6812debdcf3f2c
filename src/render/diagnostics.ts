/**
 * Turns Typst's diagnostics into what the client is told: line and column
 * in the template as sent, and messages that never show a server path.
 */
import { packageUnavailable } from '../messages.js';
import type { TemplateFailure } from './job.js';

/** A diagnostic as `NodeCompiler.fetchDiagnostics` returns it (0-based positions). */
export interface RawDiagnostic {
  message: string;
  path?: string;
  package?: string;
  range: { start: { line: number; column: number }; end: { line: number; column: number } } | null;
  /** LSP severities: 1 error, 2 warning, 3 information, 4 hint (Typst's "while calling" traces). */
  severity: number;
}

const SEVERITY_ERROR = 1;

export interface Positioning {
  /** Lines the service puts before the template in the main file. */
  prefixLines: number;
  /** Path prefixes to strip from messages (the virtual root, the package directory). */
  hiddenPaths: string[];
  /** The file `data` is read from: Typst 0.14 reports a JSON error there (with no range), 0.11 on the prefix line. */
  dataPath?: string;
}

/** Removes server paths and advice that only applies to Typst's command line. */
function cleanMessage(message: string, hiddenPaths: string[]): string {
  let text = message;
  for (const hidden of hiddenPaths) {
    if (hidden) text = text.split(hidden).join('');
  }
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
    .replace(/, hints: /g, '; hint: ')
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

const FILE_NOT_FOUND = /^file not found \(searched at (.*)\)$/;

/**
 * "file not found (searched at /logo.png)" says where the service looked,
 * which is of no use to a client: the answer names the file as the template
 * wrote it, and says how files reach a template.
 */
function missingFile(message: string, written: string | undefined): string | undefined {
  const searched = FILE_NOT_FOUND.exec(message)?.[1];
  if (searched === undefined) return undefined;
  const path = written ?? searched.replace(/^\//, '');
  if (/^[a-z][a-z0-9+.-]*:\/{0,2}/i.test(path) || path.startsWith('//')) {
    return `file not found: ${path}; hint: the service fetches nothing from the network: send the file in the request's "assets" field and name it by its asset name`;
  }
  const asset = searched.replace(/^\/+/, '') || 'logo.png';
  return `file not found: ${path}; hint: a template reads only the files sent in the request's "assets" field, e.g. "assets": {"${asset}": "<base64>"}`;
}

/**
 * Picks the first error and words it. `hasSyntaxErrors` tells whether the
 * template failed to parse (Typst evaluates nothing then, so every error is
 * a syntax error) or parsed and failed while running. `written` gives the
 * text of a span of the template, to quote a path as the template wrote it.
 */
export function toFailure(
  diags: RawDiagnostic[],
  hasSyntaxErrors: boolean,
  pos: Positioning,
  written: (d: RawDiagnostic) => string | undefined = () => undefined,
): TemplateFailure {
  const errors = diags.filter((d) => d.severity === SEVERITY_ERROR);
  const first = errors[0] ?? diags[0];
  if (!first) {
    return { kind: 'evaluation', message: 'compilation failed without a diagnostic', line: null, column: null };
  }
  const cleaned = cleanMessage(first.message, pos.hiddenPaths);
  const inMain = isMainFile(first.path);
  const message = missingFile(cleaned, inMain ? written(first) : undefined) ?? cleaned;
  // A span on the service's own prefix line, or an error in the data file itself, means Typst could not read `data`.
  if ((inMain && first.range && first.range.start.line < pos.prefixLines) || (pos.dataPath !== undefined && first.path === pos.dataPath)) {
    return { kind: 'data', message };
  }
  // An error inside a file the template included (an asset): its own lines, and its name.
  const line = inMain ? templateLine(first, pos.prefixLines) : first.range ? first.range.start.line + 1 : null;
  return {
    kind: hasSyntaxErrors ? 'syntax' : 'evaluation',
    message,
    line,
    column: line === null || !first.range ? null : first.range.start.column + 1,
    ...(inMain || !first.path ? {} : { file: first.path.replace(/^\//, '') }),
  };
}
