/**
 * A job's run in the worker: the job compiled on its engine, the exact
 * re-check of a body whose `data` was left to Typst, the hint that a
 * failed template compiles with Typst 0.14, the finishing steps
 * (src/finish/: attachments' plain names, the e-invoice), and the one
 * answer all of it comes to (`JobAnswer`, the answer of a `JobResult`),
 * worded as the answer's bytes.
 * The worker's life around it (the pipe, the scrubs between jobs) is
 * worker.ts.
 */
import { DEFAULT_MAX_IMAGE_PIXELS } from '../api-values.js';
import { errorBody, jsonErrorBody } from '../bytes/error-body.js';
import { type CheckOptions, checkBody } from '../bytes/json-check.js';
import type { BodyError, BodyLayout, Job, Range } from '../bytes/layout.js';
import { stringHazard, valueHazard } from '../bytes/text-runs.js';
import { plainAttachmentNames } from '../finish/attachments.js';
import { finishJob } from '../finish/einvoice-job.js';
import { forgetCheckedXml } from '../finish/xml-schema.js';
import { MESSAGES, pdfTooLargeMessage, templateMessage, textRefusedMessage, warningsHeader } from '../messages.js';
import type { Holdings } from '../retention/holdings.js';
import { wipe } from '../retention/wipe.js';
import { DEFAULT_ENGINE, type EngineId } from '../engines.js';
import type { Compiled, EngineOptions, TypstEngine } from './engine.js';
import { cpuMsSince, type EvictionCost } from './eviction-cost.js';
import { type JobAnswer, type JobReport, WORKER_STATUS } from './job.js';

/** A job refused before any compile: the status and the words of its answer. */
type Refusal = { status: number; message: string } | BodyError;

/** One compile of a job: the engine's outcome, or the job refused before it reached one. */
type Attempt = Compiled | { ok: false; refused: Refusal };

/** What a run leaves to be collected (see JobRun.garbage). */
export type Garbage = 'none' | 'strings';

export interface JobRun {
  result: JobAnswer & Pick<JobReport, 'engine' | 'relaid'>;
  /**
   * What the run left for the worker to collect after the answer: JavaScript
   * strings of the request (Typst's messages or warnings, an e-invoice's
   * refusal or rules, its asset names), or nothing. The finishing steps' buffers need no
   * collection: each is wiped once used, and is memory of its own, outside
   * V8's heap (retention/owned-buffer.ts), or filled as it is freed
   * (retention/freed-memory-fill.ts).
   */
  garbage: Garbage;
  /** The job's clean-up drops its engine's compiler (endJob), whose successor the worker then makes. */
  dropsCompiler: boolean;
}

export class JobRunner {
  /** The engine of the last job: the one that still holds its files until its clean(). */
  private last: TypstEngine | undefined;
  /**
   * An engine this job cleaned before compiling on the other one (a run on
   * 0.14, then again on 0.11 with the layout its exact check found) that
   * dropped its compiler: endJob hands it on to be prepared again.
   */
  private droppedEarlier: TypstEngine | undefined;
  private readonly defaultEngine: EngineId;
  /** The exact check of a body whose `data` was left to Typst (see run). */
  private readonly exactCheck: CheckOptions;
  private readonly maxPdfBytes: number;

  constructor(
    private readonly engines: Map<EngineId, TypstEngine>,
    options: EngineOptions,
    /** What the engines' clean-ups cost over a new worker's: counted at each. */
    private readonly evictionCost: EvictionCost,
  ) {
    this.defaultEngine = options.defaultEngine ?? DEFAULT_ENGINE;
    this.exactCheck = { maxImagePixels: options.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS, largeDataBytes: Infinity };
    this.maxPdfBytes = options.maxPdfBytes ?? Number.POSITIVE_INFINITY;
  }

  /**
   * Runs the job. Its result's bytes are handed to `answer`, whose owner
   * wipes them once they are written; every other buffer of the run is
   * wiped here, as soon as it is done with.
   */
  run(job: Job, answer: Holdings): JobRun {
    const ran = this.runExactly(job);
    const { attempt } = ran;
    if (!ran.retried && this.mayCompileOn014(job, attempt) && this.probe014(job)) {
      attempt.failure.message += `; ${MESSAGES.compilesWith014}`;
    }
    const { result, finished } = this.resultOf(job, attempt, answer);
    // Asset names are strings in the worker while the engine maps them (engine.ts mapAssets), dead once it has mapped
    // them; but the young collection alone did not always clear them on Node 24 (worker.ts forgetStrings).
    const strings = ran.retried || !attempt.ok || attempt.warnings.length > 0 || job.layout.assets.length > 0;
    const garbage = strings ? 'strings' : finished;
    const dropsCompiler = (this.last?.dropsCompiler ?? false) || this.droppedEarlier !== undefined;
    return { result: { ...result, engine: ran.engine, relaid: ran.relaid }, garbage, dropsCompiler };
  }

  /**
   * Ends the job: libxml2 lets go of an e-invoice's XML, and its engine of its files (see TypstEngine.clean).
   * Returns the engine if it dropped its compiler (the worker collects
   * garbage, then has it prepare a new one).
   */
  endJob(): TypstEngine | undefined {
    // An e-invoice's XML, still in libxml2's memory since its check (finish/xml-schema.ts).
    forgetCheckedXml();
    const cleaned = this.last;
    const earlier = this.droppedEarlier;
    this.last = undefined;
    this.droppedEarlier = undefined;
    // Only the 0.14 engine drops its compiler, so at most one of the two did.
    return cleaned && this.clean(cleaned) ? cleaned : earlier;
  }

  private clean(engine: TypstEngine): boolean {
    const dropped = engine.clean();
    this.evictionCost.record(engine);
    return dropped;
  }

  private engineOf(job: Job): EngineId {
    return job.layout.typst ?? this.defaultEngine;
  }

  /** Compiles `job` on its engine. */
  private render(job: Job): Attempt {
    const id = this.engineOf(job);
    if (job.layout.pdf && id !== '0.14') return refused(WORKER_STATUS.templateFailed, MESSAGES.pdfNeeds014);
    // Text both engines crash on is refused before they see it (a `data` left to Typst is checked exactly first if so: see runExactly).
    const template = stringHazard(job.body, job.layout.template);
    if (template) return refused(WORKER_STATUS.textRefused, textRefusedMessage(template, 'template'));
    const data = valueHazard(job.body, job.layout.data);
    if (data) return refused(WORKER_STATUS.textRefused, textRefusedMessage(data, 'data'));
    if (this.last && this.last !== this.engines.get(id) && this.clean(this.last)) this.droppedEarlier = this.last;
    this.last = this.engines.get(id)!;
    const { pdf } = job.layout;
    const started = process.cpuUsage();
    // An e-invoice is PDF/A-3b unless the request names another A-3 level (checked with the body).
    const compiled =
      pdf?.einvoice && !pdf.standard
        ? this.last.render({ body: job.body, layout: { ...job.layout, pdf: { ...pdf, standard: 'a-3b' } } })
        : this.last.render(job);
    // The compile alone (not the finishing, nor a refusal), counted before its engine's clean-up: eviction-cost.ts.
    this.evictionCost.addCompile(this.last, cpuMsSince(started));
    return compiled;
  }

  /** Whether the job compiles on Typst 0.14: its PDF is wiped at once. */
  private probe014(job: Job): boolean {
    const attempt = this.render({ body: job.body, layout: { ...job.layout, typst: '0.14' } });
    if (attempt.ok) wipe(attempt.pdf);
    return attempt.ok;
  }

  /**
   * Whether a failure of the 0.11 engine is one Typst 0.14 may not have: a
   * name, a field, a method or an argument 0.11 does not know. Only then is
   * the template compiled on 0.14 too, for the hint: the cost (about 40 ms
   * of the worker's time, most of it making a 0.14 compiler) falls on such
   * failed compiles alone.
   */
  private mayCompileOn014(job: Job, attempt: Attempt): attempt is Compiled & { ok: false } {
    return (
      this.engineOf(job) === '0.11' &&
      !attempt.ok &&
      'failure' in attempt &&
      attempt.failure.kind === 'evaluation' &&
      NEWER_NAMES.test(attempt.failure.message)
    );
  }

  /**
   * Compiles the job. One whose `data` the server located but did not read
   * (BodyLayout.dataUnchecked, bytes/data-end.ts) is valid JSON if Typst read
   * it, that is if the compile succeeded; if it failed, the body is checked
   * exactly here, and the answer is what the server would have given: the
   * check's 400, a compile with the layout the check found (the server's
   * guess of where `data` ends was wrong), or this failure.
   */
  private runExactly(job: Job): { attempt: Attempt; engine: EngineId; retried: boolean; relaid: boolean } {
    const attempt = this.render(job);
    const engine = this.engineOf(job);
    if (!job.layout.dataUnchecked || attempt.ok) return { attempt, engine, retried: false, relaid: false };
    const check = checkBody(job.body, this.exactCheck);
    if (!check.ok) return { attempt: { ok: false, refused: check.error }, engine, retried: true, relaid: false };
    if (sameLayout(check.layout, job.layout)) return { attempt, engine, retried: true, relaid: false };
    const exact = { body: job.body, layout: check.layout };
    return { attempt: this.render(exact), engine: this.engineOf(exact), retried: true, relaid: true };
  }

  /**
   * The answer an attempt comes to, its bytes held by `answer`, and whether
   * finishing the PDF made JavaScript strings of the request.
   */
  private resultOf(job: Job, attempt: Attempt, answer: Holdings): { result: JobAnswer; finished: Garbage } {
    if (!attempt.ok) {
      if ('failure' in attempt) {
        // Typst's message quotes the template: built once, as bytes, and wiped once written.
        const body = answer.hold(jsonErrorBody(templateMessage(attempt.failure)));
        return { result: failed(WORKER_STATUS.templateFailed, body), finished: 'none' };
      }
      const { refused: refusal } = attempt;
      // The body's own fault is worded as the server words it (body.ts); an asset's name stays bytes.
      const bytes = 'message' in refusal ? jsonErrorBody(refusal.message) : errorBody(job.body, refusal);
      return { result: failed(refusal.status, answer.hold(bytes)), finished: 'none' };
    }
    const finished = finish(job, attempt.pdf);
    if ('errorBody' in finished) {
      return { result: failed(WORKER_STATUS.templateFailed, answer.hold(finished.errorBody)), finished: finished.garbage };
    }
    if (finished.pdf.length > this.maxPdfBytes) {
      // Refused here, so an oversized PDF never crosses the pipe; the server counts a 422 frame as this refusal.
      wipe(finished.pdf);
      const body = answer.hold(jsonErrorBody(pdfTooLargeMessage(this.maxPdfBytes)));
      return { result: failed(WORKER_STATUS.pdfTooLarge, body), finished: finished.garbage };
    }
    const result: JobAnswer = {
      kind: 'pdf',
      pdf: answer.hold(finished.pdf),
      warnings: answer.hold(Buffer.from(attempt.warnings.length > 0 ? warningsHeader(attempt.warnings) : '', 'latin1')),
      einvoiceWarnings: answer.hold(finished.einvoiceWarnings ?? EMPTY),
    };
    return { result, finished: finished.garbage };
  }
}

const refused = (status: number, message: string): Attempt => ({ ok: false, refused: { status, message } });

const failed = (status: number, errorBody: Buffer): JobAnswer => ({ kind: 'failed', status, errorBody });

/**
 * Finishes a compiled PDF (src/finish/): attachments renamed to their plain
 * file names, and an e-invoice made of it (which renames them itself, so
 * that it finds its XML by the name the template gave); the new PDF
 * replaces the compiled one (which is wiped), or an e-invoice refused gives
 * the refusal's answer.
 */
function finish(job: Job, compiled: Buffer): ({ pdf: Buffer; einvoiceWarnings?: Buffer } | { errorBody: Buffer }) & { garbage: Garbage } {
  const einvoice = job.layout.pdf?.einvoice;
  if (!einvoice) {
    const plain = plainAttachmentNames(compiled).pdf;
    if (plain) wipe(compiled);
    return { pdf: plain ?? compiled, garbage: 'none' };
  }
  try {
    const finished = finishJob(job, einvoice, compiled);
    const garbage = finished.madeStrings ? 'strings' : 'none';
    return finished.ok ? { pdf: finished.pdf, einvoiceWarnings: finished.warnings, garbage } : { errorBody: finished.errorBody, garbage };
  } finally {
    wipe(compiled);
  }
}

const EMPTY = Buffer.alloc(0);

/** Typst 0.11's words for a name, field, method or argument it does not know (which a newer Typst may). */
const NEWER_NAMES = /^(unknown variable|unexpected argument|unknown field|type \S+ has no method|\S+ does not (contain|have) field)/;

const sameRange = (a: Range, b: Range) => a.start === b.start && a.end === b.end;

/** Whether two layouts of one body find the same fields in it, with the same options. */
function sameLayout(a: BodyLayout, b: BodyLayout): boolean {
  return (
    sameRange(a.data, b.data) &&
    sameRange(a.template, b.template) &&
    a.assets.length === b.assets.length &&
    a.assets.every((asset, i) => sameRange(asset.name, b.assets[i]!.name) && sameRange(asset.value, b.assets[i]!.value)) &&
    a.typst === b.typst &&
    a.pdf?.standard === b.pdf?.standard &&
    a.pdf?.tagged === b.pdf?.tagged &&
    (a.pdf?.einvoice === undefined) === (b.pdf?.einvoice === undefined) &&
    a.pdf?.einvoice?.profile === b.pdf?.einvoice?.profile &&
    a.pdf?.einvoice?.xml?.start === b.pdf?.einvoice?.xml?.start &&
    a.pdf?.einvoice?.xml?.end === b.pdf?.einvoice?.xml?.end
  );
}
