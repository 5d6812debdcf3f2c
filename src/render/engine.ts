/**
 * The Typst engine: one compiler, the request's `data` injected without
 * changing the template's meaning, and nothing of a job left behind.
 *
 * The compiler's workspace is a directory that does not exist, so the only
 * files a template can reach are the in-memory ("shadow") files of its own
 * job; every path, absolute or `../`, resolves inside that empty root.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NodeCompiler } from '@myriaddreamin/typst-ts-node-compiler';
import { packageUnavailable, toFailure, toWarnings, type Positioning, type RawDiagnostic } from './diagnostics.js';
import { unknownFontWarnings } from './font-warnings.js';
import type { FontCatalog } from './fonts.js';
import type { TemplateFailure, Warning } from './protocol.js';
import { VIRTUAL_ROOT } from './virtual-root.js';

/** Virtual project root: must not exist on the host. */
export { VIRTUAL_ROOT };

/**
 * The one line put before the template. It binds `data` from the request
 * body exactly as Typst's `json()` reads it, and ends with a newline so the
 * template's first line still starts a line (`= Title` stays a heading).
 */
const REQUEST_FILE = '/request.json';
const PREFIX = `#let data = json("${REQUEST_FILE}").data\n`;
const PREFIX_LINES = 1;

/** Same line count as PREFIX; stops evaluation at once if the template parses. */
const PROBE_MARK = 'typst-pdf-service syntax probe';
const SYNTAX_PROBE = `#panic("${PROBE_MARK}")\n`;

/** `import`/`include` of a package literal, e.g. `#import "@preview/cetz:0.2.2"`. */
const PACKAGE_IMPORT = /\b(?:import|include)\s*\(?\s*"@([a-z0-9_-]+)\/([a-z0-9_-]+):(\d+\.\d+\.\d+)"/gi;

/** Settings the server passes to each worker. */
export interface EngineOptions {
  /** Operator-provided package directory (`<namespace>/<name>/<version>`). */
  packagePath?: string;
}

export type RenderOutcome =
  | { ok: true; pdf: Buffer; pages: number; warnings: Warning[] }
  | { ok: false; failure: TemplateFailure };

export class TypstEngine {
  private readonly compiler: NodeCompiler;
  private readonly positioning: Positioning;
  /** Lower-case names of every family loaded, to warn about the others. */
  private readonly knownFamilies: ReadonlySet<string>;

  /** `fonts` are handed to the compiler once, here; without them only Typst's own fonts exist. */
  constructor(
    private readonly options: EngineOptions = {},
    fonts?: FontCatalog,
  ) {
    if (existsSync(VIRTUAL_ROOT)) {
      throw new Error(`${VIRTUAL_ROOT} exists on this host; the compiler's root must be an empty, non-existent path`);
    }
    this.compiler = NodeCompiler.create({
      workspace: VIRTUAL_ROOT,
      fontArgs: fonts ? [{ fontBlobs: fonts.blobs }] : [],
    });
    this.knownFamilies = new Set((fonts?.families ?? []).map((f) => f.family.toLowerCase()));
    this.positioning = {
      prefixLines: PREFIX_LINES,
      hiddenPaths: [VIRTUAL_ROOT, options.packagePath ?? ''].filter(Boolean),
    };
  }

  /** Set while a job's files and cache are still held (see `keepUntilClean`). */
  private dirty = false;

  /**
   * Compiles one template against the request body and leaves the compiler clean.
   * With `keepUntilClean`, the caller calls clean() itself once it has sent the
   * outcome: evicting the cache takes about 15% of a compile, and the client need
   * not wait for it. The next render cleans first in any case.
   */
  render(body: Uint8Array, template: string, options: { keepUntilClean?: boolean } = {}): RenderOutcome {
    if (this.dirty) this.clean();
    const missing = this.missingPackage(template);
    if (missing) return { ok: false, failure: missing };
    this.dirty = true;
    try {
      this.compiler.mapShadow(VIRTUAL_ROOT + REQUEST_FILE, Buffer.from(body.buffer, body.byteOffset, body.byteLength));
      const result = this.compiler.compile({ mainFileContent: PREFIX + template });
      const document = result.result;
      const diagnostics = result.takeDiagnostics();
      const raw: RawDiagnostic[] = diagnostics ? this.compiler.fetchDiagnostics(diagnostics) : [];
      if (!document) {
        return { ok: false, failure: toFailure(raw, this.hasSyntaxErrors(template), this.positioning) };
      }
      const pdf = this.compiler.pdf(document);
      const warnings = [...toWarnings(raw, this.positioning), ...unknownFontWarnings(template, this.knownFamilies)];
      return { ok: true, pdf, pages: document.numOfPages, warnings };
    } finally {
      if (!options.keepUntilClean) this.clean();
    }
  }

  /** Drops the job's files and every memoized result, so nothing reaches the next job. */
  clean(): void {
    this.compiler.resetShadow();
    this.compiler.evictCache(0);
    this.dirty = false;
  }

  /**
   * Typst evaluates nothing when the file has syntax errors. Compiling the
   * template behind a line that panics tells the two cases apart: a parse
   * error comes back instead of the panic only if the template does not parse.
   */
  private hasSyntaxErrors(template: string): boolean {
    const result = this.compiler.compile({ mainFileContent: SYNTAX_PROBE + template });
    const diagnostics = result.takeDiagnostics();
    if (!diagnostics) return false;
    const raw: RawDiagnostic[] = this.compiler.fetchDiagnostics(diagnostics);
    return !raw.some((d) => d.message.includes(PROBE_MARK));
  }

  /** Packages are never downloaded: a literal import of one not provided fails at once. */
  private missingPackage(template: string): TemplateFailure | null {
    for (const match of template.matchAll(PACKAGE_IMPORT)) {
      const [, namespace, name, version] = match as unknown as [string, string, string, string];
      const dir = this.options.packagePath && join(this.options.packagePath, namespace, name, version);
      if (dir && existsSync(dir)) continue;
      const before = template.slice(0, match.index);
      const line = before.split('\n').length;
      const column = [...before.slice(before.lastIndexOf('\n') + 1)].length + 1;
      const message = packageUnavailable(`@${namespace}/${name}:${version}`);
      return { kind: 'evaluation', message, line, column };
    }
    return null;
  }
}
