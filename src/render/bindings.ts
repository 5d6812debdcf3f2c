/**
 * The two Typst bindings behind one interface. Each engine is a version of
 * `@myriaddreamin/typst-ts-node-compiler` (the later one installed under an
 * alias), and both load in one process. They differ in small ways this
 * file hides: the later one reports positions as `character` (not
 * `column`) and paths with the workspace in front, takes PDF export
 * options, and refuses what a PDF standard forbids by throwing the text of
 * its diagnostics instead of returning them.
 *
 * Loads native code: only workers import it (through engine.ts).
 */
import { NodeCompiler as NodeCompiler011 } from '@myriaddreamin/typst-ts-node-compiler';
import { NodeCompiler as NodeCompiler014 } from 'typst-ts-node-compiler-0.14';
import { MESSAGES } from '../messages.js';
import type { RawDiagnostic } from './diagnostics.js';
import { ENGINE_VERSIONS, type EngineId } from '../engines.js';
import type { PdfOptions } from '../api-values.js';

/** What the engine uses of a compiler, the same for both bindings. */
export interface Compiler {
  mapShadow(path: string, content: Buffer): void;
  unmapShadow(path: string): void;
  resetShadow(): void;
  evictCache(maxAge: number): void;
  /** Compiles the file; its diagnostics (0-based lines and columns, paths inside the workspace), none when it compiled. */
  diagnostics(mainFilePath: string): RawDiagnostic[];
  /** Compiles and exports in one call; throws when either fails (see exportRefusal). */
  pdf(mainFilePath: string, options?: PdfOptions): Buffer;
}

export interface CompilerArgs {
  workspace: string;
  fontPaths: string[];
}

export interface Binding {
  id: EngineId;
  /** The exact Typst version. */
  version: string;
  /** Whether the export takes a PDF standard and tagging (`pdf` field). */
  pdfOptions: boolean;
  /**
   * Whether a compiler that parsed a job's file as Typst source must be
   * replaced after that job. The 0.14 binding's compiler keeps every source
   * text it parsed, with its syntax tree, for as long as it lives (its file
   * system's source cache, which none of its calls evicts: `evictCache(0)`,
   * a reset of its files and a compile of another file all leave it); only
   * dropping the compiler frees it (once V8 has collected it, see worker.ts).
   * engine.ts keeps templates out of that cache where it can (TEXT_ENTRY).
   */
  replaceAfterJob: boolean;
  /**
   * Whether its PDF export dies on a raster image inside an SVG that it
   * cannot decode (0.11's SVG conversion unwraps the decode): the engine
   * then has it decode each such image first (svg-check.ts).
   */
  svgImagesCrash: boolean;
  create(args: CompilerArgs): Compiler;
}

/** The calls both native compilers have in common, as the engine uses them. */
interface NativeCompiler {
  mapShadow(path: string, content: Buffer): void;
  unmapShadow(path: string): void;
  resetShadow(): void;
  evictCache(maxAge: number): void;
  compile(opts: { mainFilePath: string }): { takeDiagnostics(): unknown };
  fetchDiagnostics(diagnostics: never): unknown[];
  pdf(by: { mainFilePath: string }, opts?: { pdfStandard?: string; pdfTags?: boolean }): Buffer;
}

interface NativePosition {
  line: number;
  column?: number;
  character?: number;
}

interface NativeDiagnostic {
  message: string;
  path?: string;
  package?: string;
  range: { start: NativePosition; end: NativePosition } | null;
  severity: number;
}

const position = (p: NativePosition) => ({ line: p.line, column: p.column ?? p.character ?? 0 });

function wrap(native: NativeCompiler, workspace: string, pdfOptions: boolean): Compiler {
  const inWorkspace = (path: string | undefined) => (path?.startsWith(`${workspace}/`) ? path.slice(workspace.length) : path);
  return {
    mapShadow: (path, content) => native.mapShadow(path, content),
    unmapShadow: (path) => native.unmapShadow(path),
    resetShadow: () => native.resetShadow(),
    evictCache: (maxAge) => native.evictCache(maxAge),
    diagnostics(mainFilePath) {
      const result = native.compile({ mainFilePath });
      const taken = result.takeDiagnostics();
      if (!taken) return [];
      return (native.fetchDiagnostics(taken as never) as NativeDiagnostic[]).map((d) => ({
        message: d.message,
        path: inWorkspace(d.path),
        package: d.package,
        range: d.range ? { start: position(d.range.start), end: position(d.range.end) } : null,
        severity: d.severity,
      }));
    },
    pdf(mainFilePath, options) {
      if (!pdfOptions || !options) return native.pdf({ mainFilePath });
      const opts: { pdfStandard?: string; pdfTags?: boolean } = {};
      if (options.standard) opts.pdfStandard = options.standard;
      if (options.tagged !== undefined) opts.pdfTags = options.tagged;
      return native.pdf({ mainFilePath }, opts);
    },
  };
}

const BINDINGS: Record<EngineId, Binding> = {
  '0.11': {
    id: '0.11',
    version: ENGINE_VERSIONS['0.11'],
    pdfOptions: false,
    replaceAfterJob: false,
    svgImagesCrash: true,
    create: ({ workspace, fontPaths }) =>
      wrap(NodeCompiler011.create({ workspace, fontArgs: [{ fontPaths }] }) as unknown as NativeCompiler, workspace, false),
  },
  '0.14': {
    id: '0.14',
    version: ENGINE_VERSIONS['0.14'],
    pdfOptions: true,
    replaceAfterJob: true,
    svgImagesCrash: false,
    create: ({ workspace, fontPaths }) =>
      wrap(NodeCompiler014.create({ workspace, fontArgs: [{ fontPaths }] }) as unknown as NativeCompiler, workspace, true),
  },
};

export function bindingOf(id: EngineId): Binding {
  return BINDINGS[id];
}

/** A Rust string literal's content as Debug writes it: `\"`, `\\`, `\n`, `\t`, `\r`, `\'`, `\0`, `\u{…}`. */
function unescapeRust(text: string): string {
  return text.replace(/\\(u\{([0-9a-fA-F]{1,6})\}|.)/g, (_all, escaped: string, hex: string | undefined) => {
    if (hex !== undefined) return String.fromCodePoint(Number.parseInt(hex, 16));
    return escaped === 'n' ? '\n' : escaped === 't' ? '\t' : escaped === 'r' ? '\r' : escaped === '0' ? '\0' : escaped;
  });
}

const STRING = String.raw`"((?:[^"\\]|\\.)*)"`;
const FIRST_ERROR = new RegExp(String.raw`SourceDiagnostic \{ severity: Error, [\s\S]*?message: ${STRING}`);
const HINTS = new RegExp(String.raw`^[\s\S]*?hints: \[((?:${STRING}(?:, )?)*)\]`);

/**
 * The message of a PDF export refusal: Typst's export (0.14) checks the
 * document against the PDF standard asked for, and the binding throws its
 * diagnostics as their Rust debug text, with no position, e.g.
 * `[SourceDiagnostic { severity: Error, span: Span(…), message: "PDF/A-1b error: …", trace: [], hints: ["…"] }]`.
 * Returns the first error's message and its hints as the service words
 * them (`; hint: …`), never the debug text itself; undefined when the
 * error is not such a refusal (a compile error: its diagnostics tell).
 */
export function exportRefusal(error: unknown): string | undefined {
  const text = error instanceof Error ? error.message : '';
  if (!text.includes('SourceDiagnostic {')) return undefined;
  const first = FIRST_ERROR.exec(text);
  if (!first) return MESSAGES.exportFailed;
  const rest = text.slice(first.index + first[0].length);
  // The hints of this diagnostic come before the next one starts.
  const own = rest.split('SourceDiagnostic {')[0]!;
  const hints = [...(HINTS.exec(own)?.[1] ?? '').matchAll(new RegExp(STRING, 'g'))].map((m) => unescapeRust(m[1]!));
  return [unescapeRust(first[1]!), ...hints.map((h) => `hint: ${h}`)].join('; ');
}
