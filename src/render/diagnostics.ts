/**
 * Turns Typst's diagnostics into what the client is told: line and column
 * in the template as sent, and messages that never show a server path.
 */
import { packageUnavailable } from '../messages.js';
import type { TemplateFailure, Warning } from './protocol.js';

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
export const SEVERITY_WARNING = 2;

export interface Positioning {
  /** Lines the service puts before the template in the main file. */
  prefixLines: number;
  /** Path prefixes to strip from messages (the virtual root, the package directory). */
  hiddenPaths: string[];
}

/** Removes server paths and advice that only applies to Typst's command line. */
export function cleanMessage(message: string, hiddenPaths: string[]): string {
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

/**
 * Picks the first error and words it. `hasSyntaxErrors` tells whether the
 * template failed to parse (Typst evaluates nothing then, so every error is
 * a syntax error) or parsed and failed while running.
 */
export function toFailure(diags: RawDiagnostic[], hasSyntaxErrors: boolean, pos: Positioning): TemplateFailure {
  const errors = diags.filter((d) => d.severity === SEVERITY_ERROR);
  const first = errors[0] ?? diags[0];
  if (!first) {
    return { kind: 'evaluation', message: 'compilation failed without a diagnostic', line: null, column: null };
  }
  const message = cleanMessage(first.message, pos.hiddenPaths);
  // A span on the service's own prefix line means Typst could not read `data`.
  if (first.range && first.range.start.line < pos.prefixLines) {
    return { kind: 'data', message };
  }
  const line = templateLine(first, pos.prefixLines);
  return {
    kind: hasSyntaxErrors ? 'syntax' : 'evaluation',
    message,
    line,
    column: line === null || !first.range ? null : first.range.start.column + 1,
  };
}

export function toWarnings(diags: RawDiagnostic[], pos: Positioning): Warning[] {
  return diags
    .filter((d) => d.severity === SEVERITY_WARNING)
    .map((d) => ({ message: cleanMessage(d.message, pos.hiddenPaths), line: templateLine(d, pos.prefixLines) }));
}
