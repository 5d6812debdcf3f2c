/**
 * The Typst engine: one compiler, the request's `data` injected without
 * changing the template's meaning, and nothing of a job left behind.
 *
 * The compiler's workspace is a directory that does not exist, so the only
 * files a template can reach are the in-memory ("shadow") files of its own
 * job; every path, absolute or `../`, resolves inside that empty root.
 *
 * A job arrives as the request body's bytes and the places of its fields.
 * The template is unescaped from its JSON string (or copied from its form
 * part) straight into a buffer and
 * becomes the main file, behind a one-line prefix that binds `data`; `data`
 * is the JSON of the `data` field as sent; each asset is decoded into a
 * file of its own name. None of it becomes a JavaScript string: the
 * binding copies each file into the compiler, and our buffers are wiped.
 */
import { existsSync } from 'node:fs';
import type { RuleFile } from '../config.js';
import type { TemplateFailure, Warning } from '../api-values.js';
import { assetContent, assetName, copyOf } from '../bytes/asset-bytes.js';
import type { BodyLayout, Job } from '../bytes/layout.js';
import { unescapeJsonString } from '../bytes/json-string.js';
import { type Positioning, type SentText, SEVERITY_ERROR, toFailure } from './diagnostics.js';
import { FamilyNames, unknownFontWarnings } from './fonts/warnings.js';
import { pathTemplateWarnings } from './path-template.js';
import { bomLength } from '../bytes/text-position.js';
import { AssetsByName, INLINE_BUDGET_BYTES, inlineLinkedAssets, isSvgName, type LinkableAsset } from './svg-links.js';
import { type RasterImage, rasterImages, SVG_DEPTH_LIMIT, svgDepth } from './svg-check.js';
import { SVG_REFUSAL } from '../messages.js';
import type { FontCatalog } from './fonts/types.js';
import { VIRTUAL_ROOT } from './virtual-root.js';
import { mayReadSources } from './source-reading-words.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { type Binding, bindingOf, type Compiler, type CompilerArgs, exportRefusal } from './bindings.js';
import type { EngineId } from '../engines.js';
import { wipe } from '../retention/wipe.js';

/**
 * The service's own files. Their names start with `~`, which no asset name
 * may (asset-names.ts), so no asset can shadow or read them.
 * The main file sits in the root, so that relative paths in the template
 * (`#image("logo.png")`) resolve from the root, where assets are mapped.
 *
 * Jobs take turns between two main file names. The compiler keeps the
 * parsed main file of the last compile and edits it in place when the next
 * one reads the same path, which would leave the end of a longer earlier
 * template in memory; under a fresh name it parses anew, and the previous
 * job's files are dropped (and, with the workers' malloc settings, wiped).
 */
const MAIN_FILES = ['/~template-a.typ', '/~template-b.typ'] as const;
/** The syntax probe (see hasSyntaxErrors) is parsed under a name of its own, for the same reason. */
const PROBE_FILE = '/~probe.typ';
const DATA_FILE = '/~data.json';
/** Compiled after each job to make the compiler let go of the job's files (see clean). */
const BLANK_FILE = '/~blank.typ';

/**
 * The Typst 0.14 binding keeps the parsed text of every source file it has
 * read, for as long as the compiler lives: its file system's source cache
 * (tinymist-vfs `SourceCache`, one entry per file and content) is evicted by
 * none of the calls the binding has (`evictCache` evicts comemo's memos and
 * the files read, `resetShadow` the mapped files, and a compile of another
 * file adds an entry without removing one); only dropping the compiler frees
 * it. So a 0.14 job whose template can be compiled without becoming a source
 * file is: the main file is this constant, which reads the template as text
 * (a read goes through the file cache that the clean-up does empty) and
 * evaluates it as markup with `data` in scope, exactly what the main file
 * with PREFIX means. Only the constant is ever parsed as a file.
 * Evaluated code has no positions of its own (every span is the `eval`
 * call), so a template that fails this way is compiled again as a file, for
 * the outcome and the line and column of its error; and a template that
 * could make Typst read a file as source (source-reading-words.ts) is compiled as a
 * file at once. Either way the compiler then holds the template and is
 * replaced after the job (clean()).
 */
const TEXT_FILE = '/~template.txt';
const TEXT_ENTRY = '/~text-entry.typ';
/** The images from inside SVGs (numbered after it), and the file that has Typst decode them (undecodable). */
const SVG_IMAGE_FILE = '/~svg-image';
const SVG_IMAGE_CHECK = '/~svg-image-check.typ';
const TEXT_ENTRY_SOURCE = Buffer.from(
  `#let data = json("${DATA_FILE}")\n#eval(read("${TEXT_FILE}"), mode: "markup", scope: (data: data))\n`,
);
const EMPTY = Buffer.alloc(0);

/**
 * The one line put before the template. It binds `data` exactly as Typst's
 * `json()` reads it, and ends with a newline so the template's first line
 * still starts a line (`= Title` stays a heading).
 */
const PREFIX = Buffer.from(`#let data = json("${DATA_FILE}")\n`);
const PREFIX_LINES = 1;

/** Same line count as PREFIX; stops evaluation at once if the template parses. */
const PROBE_MARK = 'typst-pdf-service syntax probe';
const SYNTAX_PROBE = Buffer.from(`#panic("${PROBE_MARK}")\n`);

/** Settings the server passes to each worker. */
export interface EngineOptions {
  /**
   * The workers' package directory: a copy of PACKAGE_PATH (`<namespace>/<name>/<version>`) or a link to it
   * (sandbox.ts), the only path to packages Typst sees. Messages never show it.
   */
  packageDirectory?: string;
  /** Font files and families (catalog.ts); without them only Typst's own fonts exist. */
  fonts?: FontCatalog;
  /** Largest PDF answered (MAX_PDF_BYTES); the worker answers 422 past it. */
  maxPdfBytes?: number;
  /** WORKER_WRITES_PDF_BYTES: a PDF from this size on stays in the worker, which writes it to the client (0 or unset: never). */
  workerWritesPdfBytes?: number;
  /** The engine of a request without a `typst` field (TYPST_VERSION); 0.11 when unset. */
  defaultEngine?: EngineId;
  /** MAX_IMAGE_PIXELS, for the worker's exact check of a body whose `data` was left to Typst. */
  maxImagePixels?: number;
  /** EINVOICE_RULES: the operator's business-rule stylesheets, by profile (finish/business-rules.ts). */
  einvoiceRules?: RuleFile[];
  /** Whether a package in PACKAGE_PATH could hand a template `eval` (package-scan.ts); taken as true when unset. */
  packagesMayHandOutEval?: boolean;
}

/**
 * A clean-up's timed eviction, which finds only the blank compile's few
 * results left to evict: its time is almost all the walk of comemo's list,
 * and `evictions` how many walks it stands for (eviction-cost.ts): its own
 * two, and one for each clean-up until the next timed one.
 */
export type Eviction = Readonly<{ walkMs: number; evictions: number }>;
const NO_EVICTION: Eviction = { walkMs: 0, evictions: 0 };

/** One clean-up in this many times its walk with a second eviction (see clean). */
export const WALK_SAMPLED_EVERY = 16;

/** What the engine made of a job: the PDF and its warnings, or why the template failed (the worker words it). */
export type Compiled = { ok: true; pdf: Buffer; warnings: Warning[] } | { ok: false; failure: TemplateFailure };

export class TypstEngine {
  /** The compiler; none between a dropped one (clean) and prepare() or the next job. */
  private current: Compiler | undefined;
  private readonly binding: Binding;
  private readonly compilerArgs: CompilerArgs;
  private readonly positioning: Positioning;
  /** Every family loaded, to warn about the others. */
  private readonly knownFamilies: FamilyNames;
  /** Set while a job's files and cache are still held (see `render`). */
  private dirty = false;
  /** Set when a job's template was parsed as a source file, which only a new compiler forgets (see TEXT_ENTRY). */
  private holdsSource = false;
  /** Jobs compiled, to take turns between the main file names. */
  private jobs = 0;
  private mainFile: string = MAIN_FILES[0];
  /** The timed eviction not yet taken (takeEviction). */
  private eviction: Eviction = NO_EVICTION;
  private cleanups = 0;
  private readonly packagesMayHandOutEval: boolean;

  /** The exact Typst version of this engine. */
  readonly version: string;

  /**
   * The timed eviction of a clean-up since the last call, if one made it
   * (see Eviction); a clean-up that render() makes itself counts too.
   */
  takeEviction(): Eviction {
    const taken = this.eviction;
    this.eviction = NO_EVICTION;
    return taken;
  }

  constructor(engine: EngineId, options: EngineOptions = {}) {
    const { fonts } = options;
    if (existsSync(VIRTUAL_ROOT)) {
      throw new Error(`${VIRTUAL_ROOT} exists on this host; the compiler's root must be an empty, non-existent path`);
    }
    this.binding = bindingOf(engine);
    this.version = this.binding.version;
    // Paths, not contents: the compiler reads a font file once a document uses it.
    this.compilerArgs = { workspace: VIRTUAL_ROOT, fontPaths: fonts?.files ?? [] };
    this.prepare();
    // Each engine warns about the families it lacks: Typst 0.14 has Libertinus Serif where 0.11 had Linux Libertine.
    this.knownFamilies = new FamilyNames((fonts?.families ?? []).filter((f) => !f.typst || f.typst.includes(engine)).map((f) => f.family));
    this.packagesMayHandOutEval = options.packagesMayHandOutEval ?? true;
    this.positioning = {
      prefixLines: PREFIX_LINES,
      hiddenPaths: [VIRTUAL_ROOT, ...(options.packageDirectory ? [options.packageDirectory] : [])],
      packageDirectory: options.packageDirectory,
      dataPath: DATA_FILE,
    };
  }

  /**
   * Compiles one job. The compiler keeps the job's files and memoized
   * results until clean() (or the next render): the caller sends the
   * outcome first, since evicting the cache takes about 15% of a compile
   * and the client need not wait for it.
   */
  render(job: Job): Compiled {
    if (this.dirty) this.clean();
    this.dirty = true;
    this.mainFile = VIRTUAL_ROOT + MAIN_FILES[this.jobs++ % MAIN_FILES.length];
    const { body, layout } = job;
    const template = layout.form ? copyOf(body, layout.template) : unescapeJsonString(body, layout.template);
    // A leading byte order mark is dropped, as the Typst CLI does, so line 1 keeps its meaning.
    const bom = bomLength(template);
    const source = template.subarray(bom);
    try {
      this.compiler.mapShadow(VIRTUAL_ROOT + DATA_FILE, body.subarray(layout.data.start, layout.data.end));
      const assetFailure = this.mapAssets(body, layout);
      if (assetFailure) return { ok: false, failure: assetFailure };
      if (this.binding.replaceAfterJob && !mayReadSources(source, this.packagesMayHandOutEval)) {
        const pdf = this.renderAsText(source, job);
        if (pdf) return { ok: true, pdf, warnings: this.warningsOf(source) };
      }
      this.holdsSource = this.binding.replaceAfterJob;
      this.mapMain(PREFIX, source);
      let pdf: Buffer;
      try {
        // Compiled and exported in one call: the document never becomes a JavaScript object,
        // so it is freed (and wiped) as soon as the PDF is written, not whenever V8 collects it.
        pdf = this.compiler.pdf(this.mainFile, job.layout.pdf);
      } catch (error) {
        // The document compiled, but the export refused it (a PDF standard's rule): Typst's message, with no place.
        const refusal = exportRefusal(error);
        if (refusal !== undefined) return { ok: false, failure: { kind: 'evaluation', message: refusal, line: null, column: null } };
        return { ok: false, failure: this.diagnose({ source, hadBom: bom > 0, body, dataStart: layout.data.start }) };
      }
      return { ok: true, pdf, warnings: this.warningsOf(source) };
    } finally {
      wipe(template);
    }
  }

  /** The service's own warnings about a template that compiled. */
  private warningsOf(source: Uint8Array): Warning[] {
    return [...pathTemplateWarnings(source), ...unknownFontWarnings(source, this.knownFamilies)];
  }

  /**
   * Compiles the template through TEXT_ENTRY: the PDF, or undefined when
   * either the compile or the export failed (the caller then compiles the
   * template as a file, which tells why).
   */
  private renderAsText(source: Buffer, job: Job): Buffer | undefined {
    this.compiler.mapShadow(VIRTUAL_ROOT + TEXT_FILE, source);
    this.compiler.mapShadow(VIRTUAL_ROOT + TEXT_ENTRY, TEXT_ENTRY_SOURCE);
    try {
      return this.compiler.pdf(VIRTUAL_ROOT + TEXT_ENTRY, job.layout.pdf);
    } catch {
      this.compiler.unmapShadow(VIRTUAL_ROOT + TEXT_FILE);
      return undefined;
    }
  }

  /**
   * Drops the job's files and every memoized result, so nothing reaches the
   * next job and nothing stays while the worker waits for it. Unmapping the
   * files and evicting the cache is not enough: each engine keeps something
   * of its last compile until it compiles again. 0.11's file cache keeps
   * what it read (the data, the template, each asset, parsed and as bytes);
   * 0.14 keeps the document's title when it is short enough (15 bytes) to
   * be held inside the value rather than in memory of its own, which no fill
   * of freed memory reaches (the retention scan found it in the worker's
   * heap and on its stack). A compile of an empty file of its own makes them
   * let go (about 0.7 ms of CPU on 0.14), and the workers' malloc settings
   * (retention/freed-memory-fill.ts) fill what is freed.
   *
   * The cache is evicted before that compile, not after it too: every
   * eviction walks a list as long as the longest document has made it
   * (eviction-cost.ts), and a second one would drop only the blank
   * compile's own results, none of them the job's (the next clean-up's
   * eviction drops them): after a 53-page report, one more walk of 1.2 to
   * 1.6 ms on 0.11 for every later job. One clean-up in WALK_SAMPLED_EVERY
   * still makes it, and times it: that is almost all walk (Eviction).
   *
   * The 0.14 binding's compiler keeps every source file it parsed even then
   * (see Binding.replaceAfterJob): after a job whose template it parsed as a
   * file (see TEXT_ENTRY) it is dropped, and freed once V8 collects it; a new
   * one is made by prepare(). Returns whether a compiler was dropped, so that
   * the caller collects garbage and then prepares.
   */
  clean(): boolean {
    const compiler = this.current;
    this.dirty = false;
    if (!compiler) return false;
    compiler.resetShadow();
    compiler.evictCache(0);
    compiler.mapShadow(VIRTUAL_ROOT + BLANK_FILE, EMPTY);
    compiler.diagnostics(VIRTUAL_ROOT + BLANK_FILE);
    compiler.resetShadow();
    if (this.cleanups++ % WALK_SAMPLED_EVERY === 0) {
      const started = performance.now();
      compiler.evictCache(0);
      // This walk, and the one of each clean-up until the next timed one.
      this.eviction = { walkMs: performance.now() - started, evictions: WALK_SAMPLED_EVERY + 1 };
    }
    if (!this.holdsSource) return false;
    this.holdsSource = false;
    // Its successor is made by prepare(), once the caller has let this one go: the job's content goes first.
    this.current = undefined;
    return true;
  }

  /** Whether the next clean() drops the compiler (see clean). */
  get dropsCompiler(): boolean {
    return this.holdsSource;
  }

  /** Makes the compiler if there is none (after clean() dropped one): 30 to 45 ms for Typst 0.14's. */
  prepare(): void {
    this.current ??= this.binding.create(this.compilerArgs);
  }

  private get compiler(): Compiler {
    this.prepare();
    return this.current!;
  }

  /**
   * Maps each asset as a file of its name. Contents are decoded into buffers
   * of their own, SVGs get the assets they link to inlined, and every buffer
   * is wiped once the binding has its copy. A name becomes a string (the
   * binding takes a path no other way) only for the call that maps it: while
   * the SVGs' links are inlined, which allocates as much as an SVG has
   * links, no name is a string that could live through two young
   * collections and so reach the old generation. The worker still clears
   * both generations after a job with assets (job-run.ts, worker.ts).
   * An SVG the engine would crash on (svg-check.ts) is the job's failure
   * instead: Typst's kind of 400, before the compile.
   */
  private mapAssets(body: Buffer, layout: BodyLayout): TemplateFailure | undefined {
    const assets: LinkableAsset[] = layout.assets.map((asset) => ({
      name: assetName(body, layout, asset),
      content: assetContent(body, layout, asset),
    }));
    // On an engine whose export dies on one it cannot decode: each SVG's images, for Typst to try first (svg-check.ts).
    const images: (RasterImage & { svg: LinkableAsset })[] = [];
    const failure = (svg: LinkableAsset, message: string): TemplateFailure => ({
      kind: 'evaluation',
      message,
      line: null,
      column: null,
      file: svg.name.toString('utf8'),
    });
    try {
      // Built for the first SVG: a job without one looks no name up.
      let byName: AssetsByName | undefined;
      const budget = { bytes: INLINE_BUDGET_BYTES };
      for (const asset of assets) {
        let linked = asset.content;
        if (isSvgName(asset.name)) {
          byName ??= new AssetsByName(assets);
          linked = inlineLinkedAssets(asset, byName, budget);
          const tooDeep = svgDepth(linked) > SVG_DEPTH_LIMIT;
          if (!tooDeep && this.binding.svgImagesCrash) for (const image of rasterImages(linked)) images.push({ ...image, svg: asset });
          if (tooDeep) {
            if (linked !== asset.content) wipe(linked);
            return failure(asset, SVG_REFUSAL.tooDeep(SVG_DEPTH_LIMIT));
          }
        }
        this.compiler.mapShadow(`${VIRTUAL_ROOT}/${asset.name.toString('utf8')}`, linked);
        if (linked !== asset.content) wipe(linked);
      }
      const undecodable = this.undecodable(images);
      return undecodable && failure(undecodable.image.svg, SVG_REFUSAL.undecodableImage(undecodable.message));
    } finally {
      for (const image of images) wipe(image.bytes);
      for (const asset of assets) {
        wipe(asset.name);
        wipe(asset.content);
      }
    }
  }

  /**
   * The first of `images` Typst cannot decode, with its message: all are
   * drawn by one document of their own, compiled (not exported), each on
   * its line, so that the first error's line names its image.
   */
  private undecodable<T extends RasterImage>(images: T[]): { image: T; message: string } | undefined {
    if (images.length === 0) return undefined;
    const paths = images.map((_, i) => `${SVG_IMAGE_FILE}-${i}`);
    try {
      for (const [i, image] of images.entries()) this.compiler.mapShadow(VIRTUAL_ROOT + paths[i], image.bytes);
      const document = images.map((image, i) => `#image("${paths[i]}", format: "${image.format}")`).join('\n');
      this.compiler.mapShadow(VIRTUAL_ROOT + SVG_IMAGE_CHECK, Buffer.from(document));
      const error = this.compiler.diagnostics(VIRTUAL_ROOT + SVG_IMAGE_CHECK).find((d) => d.severity === SEVERITY_ERROR);
      if (!error) return undefined;
      return { image: images[error.range?.start.line ?? 0] ?? images[0]!, message: error.message };
    } finally {
      for (const path of paths) this.compiler.unmapShadow(VIRTUAL_ROOT + path);
      this.compiler.unmapShadow(VIRTUAL_ROOT + SVG_IMAGE_CHECK);
    }
  }

  /** Maps `prefix + source` as the file `path`; the binding copies it, and our copy is wiped. */
  private mapMain(prefix: Buffer, source: Buffer, path = this.mainFile): void {
    const main = ownedBuffer(prefix.length + source.length);
    prefix.copy(main, 0);
    source.copy(main, prefix.length);
    this.compiler.mapShadow(path, main);
    wipe(main);
  }

  /** Why the main file did not compile: its first error, placed in the template (or the body) as sent. */
  private diagnose(sent: SentText): TemplateFailure {
    const raw = this.compiler.diagnostics(this.mainFile);
    return toFailure(raw, this.hasSyntaxErrors(sent.source), this.positioning, sent);
  }

  /**
   * Typst evaluates nothing when the file has syntax errors. Compiling the
   * template behind a line that panics tells the two cases apart: a parse
   * error comes back instead of the panic only if the template does not parse.
   */
  private hasSyntaxErrors(source: Buffer): boolean {
    this.mapMain(SYNTAX_PROBE, source, VIRTUAL_ROOT + PROBE_FILE);
    const raw = this.compiler.diagnostics(VIRTUAL_ROOT + PROBE_FILE);
    if (raw.length === 0) return false;
    return !raw.some((d) => d.message.includes(PROBE_MARK));
  }
}
