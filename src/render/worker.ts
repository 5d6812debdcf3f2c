/**
 * Worker process entry, the process's life: it starts both Typst engines
 * (0.11 and 0.14, see bindings.ts), reads jobs from its pipe one at a time,
 * runs each (job-run.ts), writes its result, and clears what the job left
 * before the next. Jobs arrive, and results leave, as frames of raw bytes
 * on fd 3 (frames.ts); the IPC channel carries only its start (its options
 * in, ready or fatal out), at most once its request to be replaced, and the
 * orders for the PDFs it holds, with the client's socket to write to
 * (worker-messages.ts).
 * The server kills it when a job overruns; it writes nothing to disk, logs
 * nothing of a job, and wipes every buffer of a job once it is sent.
 */
import { writeSync } from 'node:fs';
import { Socket, type SocketConstructorOpts } from 'node:net';
import { loadRules } from '../finish/business-rules.js';
import { loadSchemas, schemasLoaded } from '../finish/xml-schema.js';
import { Holdings } from '../retention/holdings.js';
import { wipe } from '../retention/wipe.js';
import { ENGINE_IDS, type EngineId } from '../engines.js';
import type { TypstEngine } from './engine.js';
import { collect, forgetAllStrings, forgetYoungStrings } from '../retention/isolate-strings.js';
import { cpuMsSince, EvictionCost } from './eviction-cost.js';
import { type Frame, FrameType, frameOnRead, readJob, writeRest, writeResult } from './frames.js';
import { JobRunner } from './job-run.js';
import { LONG_COMPILE_MS } from './job.js';
import { exitWithParent } from './parent-death.js';
import { WorkerWatch } from './worker-watch.js';
import { onDelivery, type ReceivedSocket, receiveOptions, type WorkerMessage } from './worker-messages.js';

/** The pipe of frames: fd 3 of this process (see `spawn` in pool.ts). */
const FRAME_FD = 3;

/**
 * After a failed template, or warnings: Typst's diagnostics became
 * JavaScript strings here (the binding gives them no other way), and they
 * quote the template; an e-invoice's broken business rules came back as
 * strings (their own thread clears what it read: finish/rules-thread.ts).
 * And after a job with assets: their names became strings here (the
 * binding takes a file's path no other way), and on Node 24 the young
 * collection alone left them in a worker after some runs of the retention
 * scan. Both generations are cleared (isolate-strings.ts): 9 to 9.5 ms of
 * the worker's time for a letter with a logo (all of it on its main
 * thread: pool.ts), after the answer is sent. The same collection finds a dropped 0.14 compiler (engine.ts
 * clean()), whose native memory its finalizer frees on the next turn of the
 * loop; the engine that `dropped` it makes its next compiler on the turn
 * after.
 */
function forgetStrings(dropped?: TypstEngine): void {
  forgetAllStrings();
  if (dropped) setImmediate(() => dropped.prepare());
}

/**
 * After a job that dropped its 0.14 compiler and made no strings of its
 * request: a plain collection of the whole heap finds the compiler, whose
 * finalizer frees its native memory; the old generation holds nothing of
 * the job to clear. One such collection is 4.6 ms of CPU, against 8.5 for
 * forgetStrings' last-resort one, which is two (both engines and the
 * workers' flags, in one process).
 */
function forgetCompiler(dropped: TypstEngine): void {
  forgetYoungStrings();
  collect?.({ type: 'major' });
  setImmediate(() => dropped.prepare());
}

/**
 * Writes what the client's socket takes at once, without waiting (the
 * socket is non-blocking), and lets go of the socket. Returns how much of
 * the PDF the server is not to send: all of it if the client is gone.
 */
function writeToClient(socket: ReceivedSocket, pdf: Buffer): number {
  let written = 0;
  try {
    while (written < pdf.length) written += writeSync(socket.fd, pdf, written);
  } catch (error) {
    // EAGAIN: the client reads slower than this, and the server sends the rest. Else (EPIPE, ECONNRESET) it left.
    if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') written = pdf.length;
  }
  socket.close();
  return written;
}

function send(message: WorkerMessage): void {
  process.send?.(message);
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

  // What a new worker would cost (eviction-cost.ts) follows from this one's start (CPU, all threads).
  const evictionCost = new EvictionCost(cpuMsSince());
  let replacementAsked = false;
  const runner = new JobRunner(engines, options, evictionCost);
  // A PDF from this size on is kept here and written by this process to its client's socket (pool.ts: PdfDelivery),
  // not sent through the server (from 512 KiB unless the operator says otherwise: docs/performance.md).
  const heldPdfBytes = options.workerWritesPdfBytes || Number.POSITIVE_INFINITY;
  // This process's resident memory, read the way the pool reads it (one read per job).
  const self = new WorkerWatch(process.pid);
  const residentBytes = () => self.residentBytes() ?? 0;
  // `onread` (documented for net.Socket, missing from its constructor's types): reads land in the frame's own buffer.
  const reader = frameOnRead(onFrame);
  const pipe = new Socket({ fd: FRAME_FD, readable: true, writable: true, onread: reader } as SocketConstructorOpts);
  pipe.on('error', () => process.exit(0));
  pipe.on('end', () => process.exit(0));
  send({ type: 'ready' });

  /** A PDF written by the pool's order (onDelivery), and the rest of its job. */
  let holding: { id: number; pdf: Buffer; answer: Holdings; end: () => void } | undefined;
  onDelivery((order, socket) => {
    if (!holding || order.id !== holding.id) return socket?.close();
    const { id, pdf, answer, end } = holding;
    holding = undefined;
    const written = order.drop ? pdf.length : socket ? writeToClient(socket, pdf) : 0;
    writeRest(pipe, id, pdf.subarray(written), afterWrite(answer, end));
  });

  /**
   * The clean-up of the job whose answer is going out: it waits until the pipe has all of it. What the
   * pipe does not take at once is written by this process's event loop, which a clean-up run at once
   * (the cache eviction: 90 ms after a 50-page report) would hold up, and the answer with it.
   */
  let ending: (() => void) | undefined;
  const endNow = () => {
    const end = ending;
    ending = undefined;
    end?.();
  };
  const afterWrite = (answer: Holdings, end: () => void) => {
    ending = end;
    return () => {
      answer.wipe();
      endNow();
    };
  };

  function onFrame(frame: Frame): void {
    if (frame.type !== FrameType.Job) {
      wipe(frame.bytes);
      reader.giveBack(frame);
      return;
    }
    // A job sent before the last one's answer was all written: that one's clean-up comes first.
    endNow();
    // The job is read whole: a worker that dies from here on dies with it (the pool knows from the pipe, frames.ts).
    // libxml2 (the e-invoices' XSD check) is loaded by the worker's first e-invoice, so other workers neither wait for nor hold it.
    if (schemasLoaded() || !readJob(frame).layout.pdf?.einvoice) compile(frame);
    else
      loadSchemas().then(
        () => compile(frame),
        (error: unknown) => fail(`E-invoice checks failed to load: ${startFailure(error)}`),
      );
  }

  function compile(frame: Frame): void {
    const begun = performance.now();
    const job = readJob(frame);
    // The answer's bytes, wiped once the pipe has them.
    const answer = new Holdings();
    const { result, garbage, dropsCompiler } = runner.run(job, answer);
    const compileMs = performance.now() - begun;
    const longCleanUp = compileMs >= LONG_COMPILE_MS || garbage === 'strings' || dropsCompiler;
    const report = { compileMs, residentBytes: residentBytes(), longCleanUp };
    const end = () => endJob(frame, garbage);
    if (result.kind === 'pdf' && result.pdf.length >= heldPdfBytes && !job.layout.signature) {
      // The head now, the PDF on the pool's order; the job's clean-up waits for it, so it is not on the answer's path.
      writeResult(pipe, frame.id, { ...result, ...report }, () => undefined, true);
      holding = { id: frame.id, pdf: result.pdf, answer, end };
      return;
    }
    writeResult(pipe, frame.id, { ...result, ...report }, afterWrite(answer, end));
  }

  function endJob(frame: Frame, garbage: ReturnType<JobRunner['run']>['garbage']): void {
    wipe(frame.bytes);
    reader.giveBack(frame);
    // The answer is on its way; the cache eviction still ends this job, before the next one is read.
    const dropped = runner.endJob();
    if (evictionCost.replacementDue && !replacementAsked) {
      replacementAsked = true;
      send({ type: 'replace' });
    }
    // Once this function has returned, nothing refers to the message or the warnings any more;
    // a dropped compiler (0.14) is freed by the binding's finalizer once V8 has collected it, and
    // only on the turn after that is its successor made (a job that comes first makes it itself).
    // (No closure here holds the result: one would keep its context, the message among it, alive.)
    if (garbage === 'strings') setImmediate(forgetStrings, dropped);
    else if (dropped) setImmediate(forgetCompiler, dropped);
  }
}

void main();
