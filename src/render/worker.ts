/**
 * Worker process entry: holds both Typst engines (0.11 and 0.14, see
 * bindings.ts) and compiles one job at a time, on the engine the job names.
 * Jobs arrive, and outcomes leave, as frames of raw bytes on fd 3
 * (frames.ts); the IPC channel carries only its start (its options in,
 * ready or fatal out: worker-start.ts).
 * The server kills it when a job overruns; it writes nothing to disk, logs
 * nothing of a job, and wipes every buffer of a job once it is sent.
 */
import { openSync, readSync } from 'node:fs';
import { Socket, type SocketConstructorOpts } from 'node:net';
import { Worker } from 'node:worker_threads';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../api-values.js';
import { errorBody, jsonErrorBody } from '../bytes/error-body.js';
import { type CheckOptions, checkBody } from '../bytes/json-check.js';
import type { BodyError, BodyLayout, Range, Job } from '../bytes/layout.js';
import { MESSAGES, pdfTooLargeMessage, templateMessage, textRefusedMessage, warningsHeader } from '../messages.js';
import { stringHazard, type TextHazard, valueHazard } from '../bytes/text-runs.js';
import type { Compiled, TypstEngine } from './engine.js';
import { frameOnRead, FrameType, readJob, writeDone, writeFailed, writeStarted, type Frame } from './frames.js';
import { PAGE_BYTES } from './memory-watch.js';
import { WORKER_STATUS } from './job.js';
import { DEFAULT_ENGINE, ENGINE_IDS, type EngineId } from '../typst-version.js';
import { receiveOptions, type StartReport } from './worker-start.js';
import { loadRules } from '../finish/business-rules.js';
import { plainAttachmentNames } from '../finish/attachments.js';
import { finishJob } from '../finish/einvoice-job.js';
import { loadSchemas, schemasLoaded } from '../finish/xml-schema.js';

/** The pipe of frames: fd 3 of this process (see `spawn` in pool.ts). */
const FRAME_FD = 3;

/**
 * After a failed template, or warnings: Typst's diagnostics became
 * JavaScript strings here (the binding gives them no other way), and they
 * quote the template. V8 keeps the subject of the last regular expression
 * match alive (`RegExp.lastMatch`), so a match on a constant string lets it
 * go. A regular full collection would then free the strings but leave the
 * young generation's dead ones in its idle half, which V8 never clears; a
 * last-resort collection also gives those pages back, and
 * `--clear-free-memory` (see pool.ts) zero-fills what it frees in the old
 * generation. About 10 ms of the worker's time, after the answer is sent.
 * The same collection finds a dropped 0.14 compiler (engine.ts clean()),
 * whose native memory its finalizer frees on the next turn of the loop;
 * the engine that `dropped` it makes its next compiler on the turn after.
 */
function forgetStrings(dropped?: TypstEngine): void {
  /x/.exec('x');
  (globalThis as { gc?: (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void }).gc?.({
    type: 'major',
    execution: 'sync',
    flavor: 'last-resort',
  });
  if (dropped) setImmediate(() => dropped.prepare());
}

/** This process's resident memory, from /proc/self/statm kept open (one read per job). */
const statm = openSync('/proc/self/statm', 'r');
const statmText = Buffer.alloc(128);
function residentBytes(): number {
  const length = readSync(statm, statmText, 0, statmText.length, 0);
  const fields = statmText.toString('latin1', 0, length).split(' ');
  return Number(fields[1]) * PAGE_BYTES;
}

function send(message: StartReport): void {
  process.send?.(message);
}

/**
 * If the server dies without ending this process (SIGKILL), the IPC channel
 * closes; but a compile in native code blocks the event loop and would never
 * see it. A small thread watches for the parent to change and ends the process.
 */
function exitWithParent(): void {
  const parent = process.ppid;
  const watchdog = new Worker(
    `const { workerData } = require('node:worker_threads');
     setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 250);`,
    { eval: true, workerData: parent },
  );
  watchdog.unref();
  process.on('disconnect', () => process.exit(0));
}

/**
 * SIGINT and SIGTERM sent to the whole process group (Ctrl-C in a terminal,
 * a stop of the service's group) must not cut off compiles in flight: the
 * server alone decides when a worker ends, and it uses SIGKILL.
 */
function ignoreGroupSignals(): void {
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
}

/** Tells the pool why this worker cannot start, and ends it. */
function fail(message: string): never {
  send({ type: 'fatal', message });
  process.exit(1);
}

/** The error and, for the binding's "Failed to load native binding", the first line of each attempt's cause. */
function startFailure(error: unknown): string {
  const { message, cause } = error as Error;
  const causes = Array.isArray(cause) ? cause.map((c) => String((c as Error)?.message ?? c).split('\n')[0]) : [];
  return causes.length > 0 ? `${message} (${causes.join('; ')})` : message;
}

async function main(): Promise<void> {
  ignoreGroupSignals();
  // First: a worker whose server is gone must not wait for its options.
  exitWithParent();
  const options = (await receiveOptions()) ?? fail('Typst worker received no options from the server');
  // Both engines, started together: a worker can take any job, and an idle one costs about 8 MiB (PSS) more (docs/engines-and-pdf.md).
  const engines = new Map<EngineId, TypstEngine>();
  try {
    // Loaded here, not at the top, so a native module that fails to load is reported, not a crash.
    const { TypstEngine: Engine } = await import('./engine.js');
    for (const id of ENGINE_IDS) engines.set(id, new Engine(id, options));
  } catch (error) {
    fail(`Typst engine failed to start: ${startFailure(error)}`);
  }
  try {
    // The operator's e-invoice business rules, compiled once (src/finish/): a stylesheet that does not compile stops the start.
    await loadRules(options.einvoiceRules ?? []);
  } catch (error) {
    fail(`E-invoice business rules failed to load: ${startFailure(error)}`);
  }

  // `onread` (documented for net.Socket, missing from its constructor's types): reads land in the frame's own buffer.
  const reader = frameOnRead(onFrame);
  const pipe = new Socket({ fd: FRAME_FD, readable: true, writable: true, onread: reader } as SocketConstructorOpts);
  pipe.on('error', () => process.exit(0));
  pipe.on('end', () => process.exit(0));
  send({ type: 'ready' });

  function onFrame(frame: Frame): void {
    if (frame.type !== FrameType.Job) {
      frame.bytes.fill(0);
      reader.giveBack(frame);
      return;
    }
    // Acknowledged before compiling, so the pool knows a worker that dies from here on died with the job.
    writeStarted(pipe, frame.id, () => {
      // libxml2 (the e-invoices' XSD check) is loaded by the worker's first e-invoice, so other workers neither wait for nor hold it.
      if (schemasLoaded() || !readJob(frame).layout.pdf?.einvoice) compile(frame);
      else
        loadSchemas().then(
          () => compile(frame),
          (error: unknown) => fail(`E-invoice checks failed to load: ${startFailure(error)}`),
        );
    });
  }

  const defaultEngine = options.defaultEngine ?? DEFAULT_ENGINE;
  /** The engine of the last job: the one that still holds its files until its clean(). */
  let last: TypstEngine | undefined;
  /** The exact check of a body whose `data` was left to Typst (see run). */
  const exactCheck: CheckOptions = { maxImagePixels: options.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS, largeDataBytes: Infinity };

  const engineOf = (job: Job): EngineId => job.layout.typst ?? defaultEngine;

  /** Compiles `job` on its engine; with `probe`, only to learn whether it compiles: its PDF is wiped at once. */
  function render(job: Job, probe = false): Attempt {
    const id = engineOf(job);
    if (job.layout.pdf && id !== '0.14') return 'pdf options need 0.14';
    // Text both engines crash on is refused before they see it (a `data` left to Typst is checked exactly first if so: see run).
    const template = stringHazard(job.body, job.layout.template);
    if (template) return { text: template, where: 'template' };
    const data = valueHazard(job.body, job.layout.data);
    if (data) return { text: data, where: 'data' };
    if (last && last !== engines.get(id)) last.clean();
    last = engines.get(id)!;
    const { pdf } = job.layout;
    // An e-invoice is PDF/A-3b unless the request names another A-3 level (checked with the body).
    const attempt =
      pdf?.einvoice && !pdf.standard
        ? last.render({ body: job.body, layout: { ...job.layout, pdf: { ...pdf, standard: 'a-3b' } } })
        : last.render(job);
    if (probe && attempt.ok) attempt.pdf.fill(0);
    return attempt;
  }

  /**
   * Compiles the job. One whose `data` the server located but did not read
   * (BodyLayout.dataUnchecked, bytes/data-end.ts) is valid JSON if Typst read
   * it, that is if the compile succeeded; if it failed, the body is checked
   * exactly here, and the answer is what the server would have given: the
   * check's 400, a compile with the layout the check found (the server's
   * guess of where `data` ends was wrong), or this failure.
   */
  function run(job: Job): Ran {
    const ran = runExactly(job);
    if (
      !ran.retried &&
      mayCompileOn014(job, ran.attempt) &&
      compiled(render({ body: job.body, layout: { ...job.layout, typst: '0.14' } }, true))
    ) {
      ran.attempt.failure.message += `; ${MESSAGES.compilesWith014}`;
    }
    return ran;
  }

  /**
   * Whether a failure of the 0.11 engine is one Typst 0.14 may not have: a
   * name, a field, a method or an argument 0.11 does not know. Only then is
   * the template compiled on 0.14 too, for the hint: the cost (about 40 ms
   * of the worker's time, most of it making a 0.14 compiler) falls on such
   * failed compiles alone.
   */
  function mayCompileOn014(job: Job, attempt: Attempt): attempt is Compiled & { ok: false } {
    return (
      engineOf(job) === '0.11' &&
      typeof attempt === 'object' &&
      'ok' in attempt &&
      !attempt.ok &&
      attempt.failure.kind === 'evaluation' &&
      NEWER_NAMES.test(attempt.failure.message)
    );
  }

  function runExactly(job: Job): Ran {
    const attempt = render(job);
    if (!job.layout.dataUnchecked || compiled(attempt)) return { attempt, engine: engineOf(job), retried: false, relaid: false };
    const check = checkBody(job.body, exactCheck);
    if (!check.ok) return { attempt: { refused: check.error }, engine: engineOf(job), retried: true, relaid: false };
    if (sameLayout(check.layout, job.layout)) return { attempt, engine: engineOf(job), retried: true, relaid: false };
    const exact = { body: job.body, layout: check.layout };
    return { attempt: render(exact), engine: engineOf(exact), retried: true, relaid: true };
  }

  function compile(frame: Frame): void {
    const begun = performance.now();
    const job = readJob(frame);
    const ran = run(job);
    const { engine, retried, relaid } = ran;
    const attempt = finish(job, ran.attempt);
    const report = { compileMs: performance.now() - begun, residentBytes: residentBytes(), engine, relaid };
    const maxPdfBytes = options.maxPdfBytes ?? Number.POSITIVE_INFINITY;
    if (typeof attempt === 'object' && 'einvoiceRefused' in attempt) {
      const body = attempt.einvoiceRefused;
      writeFailed(pipe, frame.id, report, WORKER_STATUS.templateFailed, body, () => body.fill(0));
    } else if (attempt === 'pdf options need 0.14') {
      const body = jsonErrorBody(MESSAGES.pdfNeeds014);
      writeFailed(pipe, frame.id, report, WORKER_STATUS.templateFailed, body, () => body.fill(0));
    } else if ('text' in attempt) {
      const body = jsonErrorBody(textRefusedMessage(attempt.text, attempt.where));
      writeFailed(pipe, frame.id, report, WORKER_STATUS.textRefused, body, () => body.fill(0));
    } else if ('refused' in attempt) {
      // The body's own fault, worded as the server words it (json-body.ts); an asset's name stays bytes.
      const body = errorBody(job.body, attempt.refused);
      writeFailed(pipe, frame.id, report, attempt.refused.status, body, () => body.fill(0));
    } else if (attempt.ok && attempt.pdf.length > maxPdfBytes) {
      // Refused here, so an oversized PDF never crosses the pipe; the server counts a 422 frame as this refusal.
      attempt.pdf.fill(0);
      const body = jsonErrorBody(pdfTooLargeMessage(maxPdfBytes));
      writeFailed(pipe, frame.id, report, WORKER_STATUS.pdfTooLarge, body, () => body.fill(0));
    } else if (attempt.ok) {
      const warnings = Buffer.from(attempt.warnings.length > 0 ? warningsHeader(attempt.warnings) : '', 'latin1');
      const { pdf } = attempt;
      writeDone(pipe, frame.id, report, warnings, attempt.einvoiceWarnings ?? EMPTY, pdf, () => pdf.fill(0));
    } else {
      // Typst's message quotes the template: built once, as bytes, and wiped once written.
      const body = jsonErrorBody(templateMessage(attempt.failure));
      writeFailed(pipe, frame.id, report, WORKER_STATUS.templateFailed, body, () => body.fill(0));
    }
    frame.bytes.fill(0);
    reader.giveBack(frame);
    // The answer is on its way; the cache eviction still ends this job, before the next one is read.
    const cleaned = last;
    const dropped = cleaned?.clean() ?? false;
    last = undefined;
    // Once this function has returned, nothing refers to the message or the warnings any more;
    // a dropped compiler (0.14) is freed by the binding's finalizer once V8 has collected it, and
    // only on the turn after that is its successor made (a job that comes first makes it itself).
    // (No closure here: one made in this function would keep its context, the message among it, alive.)
    const strings = retried || !compiled(attempt) || attempt.warnings.length > 0 || job.layout.pdf?.einvoice !== undefined;
    if (dropped || strings) setImmediate(forgetStrings, dropped ? cleaned : undefined);
  }
}

/**
 * Finishes a compiled PDF (src/finish/): attachments renamed to their plain
 * file names, then an e-invoice made of it; each step's PDF replaces the
 * one before (which is wiped), or an e-invoice refused gives the refusal's
 * answer. Anything else is returned as it is.
 */
function finish(job: Job, attempt: Attempt): Attempt {
  if (!compiled(attempt)) return attempt;
  const plain = plainAttachmentNames(attempt.pdf);
  if (plain) {
    attempt.pdf.fill(0);
    attempt.pdf = plain;
  }
  const einvoice = job.layout.pdf?.einvoice;
  if (!einvoice) return attempt;
  try {
    const finished = finishJob(job, einvoice, attempt.pdf);
    if (!finished.ok) return { einvoiceRefused: finished.errorBody };
    return { ...attempt, pdf: finished.pdf, einvoiceWarnings: finished.warnings };
  } finally {
    attempt.pdf.fill(0);
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * What a job came to in the worker: compiled (an e-invoice with its rules'
 * warnings), refused by the exact check of its body or by the text
 * pre-check, an e-invoice refused (the answer's bytes), or options its
 * engine lacks.
 */
/** A job's attempt, its engine, whether its body was checked exactly after a failed compile, and whether it was compiled again with that check's layout. */
type Ran = { attempt: Attempt; engine: EngineId; retried: boolean; relaid: boolean };

type Attempt =
  | (Compiled & { einvoiceWarnings?: Buffer })
  | { refused: BodyError }
  | { text: TextHazard; where: 'template' | 'data' }
  | { einvoiceRefused: Buffer }
  | 'pdf options need 0.14';

/** Typst 0.11's words for a name, field, method or argument it does not know (which a newer Typst may). */
const NEWER_NAMES = /^(unknown variable|unexpected argument|unknown field|type \S+ has no method|\S+ does not (contain|have) field)/;

const compiled = (attempt: Attempt): attempt is Compiled & { ok: true } => typeof attempt === 'object' && 'ok' in attempt && attempt.ok;

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

void main();
