/**
 * Length-prefixed frames of raw bytes on a worker's own pipe (its stdio fd 3).
 *
 * Request content (the body, the PDF, a template's error message) travels
 * only here, as bytes, never through Node's IPC serializer: nothing on this
 * path becomes a JavaScript string, and every buffer can be zero-filled
 * once its step is done. Node's IPC channel keeps the messages of a
 * worker's start (its options, then ready or fatal), its request to be
 * replaced and the orders for a PDF it holds (worker-messages.ts).
 *
 * A frame: u32 length of what follows, u8 type, u32 job id, then the fields
 * of its type (all integers little-endian):
 *   Job      server -> worker  u32 asset count, 13 option bytes (engine, PDF options, e-invoice), layout of the body (u32 offsets), then the body
 *   Done     worker -> server  report, u32 warnings length, warnings (ASCII), u32 e-invoice warnings length, those (ASCII), PDF
 *   Held     worker -> server  as Done, with u32 PDF length in place of the PDF, which the worker keeps (pool.ts: PdfDelivery)
 *   Rest     worker -> server  the part of a held PDF the worker did not write to the client's socket (all of it without one)
 *   Failed   worker -> server  report, u16 status, JSON error body
 * A report: f64 compile ms, f64 resident bytes (the worker's memory after
 * the job, for the memory cap), u8 the engine the job ran on (index + 1),
 * its high bit set when the worker compiled with a layout of its own.
 *
 * The pipe is a pair of Unix sockets: a worker that ends with part of a job
 * unread ends the server's side with ECONNRESET, one that read it all with
 * an end (pool.ts: leftUnread).
 */
import type { Socket } from 'node:net';
import { EINVOICE_PROFILES, PDF_STANDARDS } from '../api-values.js';
import type { BodyLayout, Job } from '../bytes/layout.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe, wipeReadChunk } from '../retention/wipe.js';
import { ENGINE_IDS } from '../engines.js';
import type { JobReport, JobResult } from './job.js';

export const FrameType = { Job: 1, Done: 3, Failed: 4, Held: 5, Rest: 6 } as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

const LENGTH_BYTES = 4;
/** Type and job id, after the length. */
const TAG_BYTES = 5;
/** A frame longer than this means the peer is broken: a body is at most 10 MiB, a PDF far less than this. */
const MAX_FRAME_BYTES = 1024 * 1024 * 1024;

/**
 * A job's options, after the asset count: the engine (0: the default, else
 * its index + 1), the PDF standard (0: none, else its index + 1), tagging
 * (0: Typst's default, 1: off, 2: on), flags (1: `data` is left to Typst,
 * BodyLayout.dataUnchecked; 2: the body is a form, BodyLayout.form; 4: the
 * server signs the PDF, so it needs it whole: BodyLayout.signature), the
 * e-invoice (0: none, 1: one without a profile, else the profile's index +
 * 2) and where its XML's name is in the body (u32 start and end; both 0:
 * the default name). Fixed values and offsets, no request content.
 */
const OPTION_BYTES = 13;

function writeOptions(buffer: Buffer, at: number, layout: BodyLayout): number {
  buffer.writeUInt8(layout.typst ? ENGINE_IDS.indexOf(layout.typst) + 1 : 0, at);
  buffer.writeUInt8(layout.pdf?.standard ? PDF_STANDARDS.indexOf(layout.pdf.standard) + 1 : 0, at + 1);
  buffer.writeUInt8(layout.pdf?.tagged === undefined ? 0 : layout.pdf.tagged ? 2 : 1, at + 2);
  buffer.writeUInt8((layout.dataUnchecked ? 1 : 0) | (layout.form ? 2 : 0) | (layout.signature ? 4 : 0), at + 3);
  const einvoice = layout.pdf?.einvoice;
  buffer.writeUInt8(einvoice ? (einvoice.profile ? EINVOICE_PROFILES.indexOf(einvoice.profile) + 2 : 1) : 0, at + 4);
  buffer.writeUInt32LE(einvoice?.xml?.start ?? 0, at + 5);
  buffer.writeUInt32LE(einvoice?.xml?.end ?? 0, at + 9);
  return at + OPTION_BYTES;
}

type JobOptions = Pick<BodyLayout, 'typst' | 'pdf' | 'dataUnchecked' | 'form' | 'signature'>;

function readOptions(bytes: Buffer, at: number): JobOptions {
  const engine = bytes.readUInt8(at);
  const standard = bytes.readUInt8(at + 1);
  const tagged = bytes.readUInt8(at + 2);
  const flags = bytes.readUInt8(at + 3);
  const options: JobOptions = {};
  if (engine > 0) options.typst = ENGINE_IDS[engine - 1];
  if (flags & 1) options.dataUnchecked = true;
  if (flags & 2) options.form = true;
  // Its texts stay in the server, which signs.
  if (flags & 4) options.signature = {};
  const einvoice = bytes.readUInt8(at + 4);
  if (standard > 0 || tagged > 0 || einvoice > 0) {
    options.pdf = {};
    if (standard > 0) options.pdf.standard = PDF_STANDARDS[standard - 1];
    if (tagged > 0) options.pdf.tagged = tagged === 2;
    if (einvoice > 0) {
      const start = bytes.readUInt32LE(at + 5);
      const end = bytes.readUInt32LE(at + 9);
      options.pdf.einvoice = {};
      if (einvoice > 1) options.pdf.einvoice.profile = EINVOICE_PROFILES[einvoice - 2];
      if (end > 0) options.pdf.einvoice.xml = { start, end };
    }
  }
  return options;
}

function head(type: FrameType, id: number, fieldBytes: number, payloadBytes: number): Buffer {
  const buffer = Buffer.allocUnsafe(LENGTH_BYTES + TAG_BYTES + fieldBytes);
  buffer.writeUInt32LE(TAG_BYTES + fieldBytes + payloadBytes, 0);
  buffer.writeUInt8(type, 4);
  buffer.writeUInt32LE(id, 5);
  return buffer;
}

/**
 * Writes a frame: a head (ids, offsets, sizes: no request content) and its
 * payload, in one corked write. `onWritten` runs once the payload is handed
 * to the kernel (or the pipe failed): only then may the payload be wiped.
 */
function writeFrame(socket: Socket, frameHead: Buffer, payload: Uint8Array | undefined, onWritten?: (error?: Error | null) => void): void {
  socket.cork();
  socket.write(frameHead);
  if (payload && payload.length > 0) socket.write(payload, onWritten);
  else if (onWritten) socket.write(Buffer.alloc(0), onWritten);
  socket.uncork();
}

export function writeJob(
  socket: Socket,
  id: number,
  body: Uint8Array,
  layout: BodyLayout,
  onWritten?: (error?: Error | null) => void,
): void {
  const ranges = [layout.data, layout.template, ...layout.assets.flatMap((a) => [a.name, a.value])];
  const frameHead = head(FrameType.Job, id, 4 + OPTION_BYTES + ranges.length * 8, body.length);
  let at = LENGTH_BYTES + TAG_BYTES;
  at = frameHead.writeUInt32LE(layout.assets.length, at);
  at = writeOptions(frameHead, at, layout);
  for (const range of ranges) {
    at = frameHead.writeUInt32LE(range.start, at);
    at = frameHead.writeUInt32LE(range.end, at);
  }
  writeFrame(socket, frameHead, body, onWritten);
}

const REPORT_BYTES = 17;
/** The two high bits of the report's engine byte: JobReport.relaid and JobReport.longCleanUp. */
const RELAID = 0x80;
const LONG_CLEAN_UP = 0x40;

function writeReport(buffer: Buffer, report: JobReport): number {
  const at = LENGTH_BYTES + TAG_BYTES;
  buffer.writeDoubleLE(report.compileMs, at);
  buffer.writeDoubleLE(report.residentBytes, at + 8);
  const flags = (report.relaid ? RELAID : 0) | (report.longCleanUp ? LONG_CLEAN_UP : 0);
  buffer.writeUInt8((ENGINE_IDS.indexOf(report.engine) + 1) | flags, at + 16);
  return at + REPORT_BYTES;
}

function readReport(bytes: Buffer): JobReport {
  const last = bytes.readUInt8(TAG_BYTES + 16);
  const engine = ENGINE_IDS[(last & ~(RELAID | LONG_CLEAN_UP)) - 1];
  if (engine === undefined) throw new FrameError('an outcome without its engine');
  return {
    compileMs: bytes.readDoubleLE(TAG_BYTES),
    residentBytes: bytes.readDoubleLE(TAG_BYTES + 8),
    engine,
    relaid: (last & RELAID) !== 0,
    longCleanUp: (last & LONG_CLEAN_UP) !== 0,
  };
}

/**
 * Writes a job's result: a Done frame for a PDF (its warnings in the head,
 * the PDF as the payload), or a Held frame for one the worker keeps
 * (`held`: the head alone, with the PDF's length), a Failed frame for an
 * error answer. `onWritten` runs once the payload is handed to the kernel:
 * only then may the result's bytes be wiped. The head, which holds the
 * warnings, is wiped then too.
 */
export function writeResult(socket: Socket, id: number, result: JobResult, onWritten: () => void, held = false): void {
  if (result.kind === 'failed') {
    const frameHead = head(FrameType.Failed, id, REPORT_BYTES + 2, result.errorBody.length);
    frameHead.writeUInt16LE(result.status, writeReport(frameHead, result));
    writeFrame(socket, frameHead, result.errorBody, onWritten);
    return;
  }
  const { warnings, einvoiceWarnings, pdf } = result;
  const fieldBytes = REPORT_BYTES + 8 + warnings.length + einvoiceWarnings.length + (held ? 4 : 0);
  const frameHead = head(held ? FrameType.Held : FrameType.Done, id, fieldBytes, held ? 0 : pdf.length);
  let at = frameHead.writeUInt32LE(warnings.length, writeReport(frameHead, result));
  at += warnings.copy(frameHead, at);
  at = frameHead.writeUInt32LE(einvoiceWarnings.length, at);
  at += einvoiceWarnings.copy(frameHead, at);
  if (held) frameHead.writeUInt32LE(pdf.length, at);
  writeFrame(socket, frameHead, held ? undefined : pdf, () => {
    wipe(frameHead);
    onWritten();
  });
}

/** Writes the part of a held PDF the worker did not write to the client's socket; `onWritten` as for writeResult. */
export function writeRest(socket: Socket, id: number, rest: Uint8Array, onWritten: () => void): void {
  writeFrame(socket, head(FrameType.Rest, id, 0, rest.length), rest, onWritten);
}

/** A received frame: its bytes (after the length), owned by the receiver, who zero-fills them when done. */
export interface Frame {
  type: FrameType;
  id: number;
  bytes: Buffer;
}

function frameOf(bytes: Buffer): Frame {
  return { type: bytes.readUInt8(0) as FrameType, id: bytes.readUInt32LE(1), bytes };
}

/** Reads a Job frame's layout and body (views into the frame's bytes). */
export function readJob(frame: Frame): Job {
  const { bytes } = frame;
  let at = TAG_BYTES;
  const assetCount = bytes.readUInt32LE(at);
  at += 4;
  const options = readOptions(bytes, at);
  at += OPTION_BYTES;
  const range = () => {
    const start = bytes.readUInt32LE(at);
    const end = bytes.readUInt32LE(at + 4);
    at += 8;
    return { start, end };
  };
  const data = range();
  const template = range();
  const assets = Array.from({ length: assetCount }, () => ({ name: range(), value: range() }));
  return { body: bytes.subarray(at), layout: { data, template, assets, ...options } };
}

/** A Held frame: the report, the answer's header values, and the length of the PDF its worker keeps. */
export type HeldHead = JobReport & { kind: 'held-head'; pdfBytes: number; warnings: Buffer; einvoiceWarnings: Buffer };

/** Reads a Done, Held or Failed frame: its buffers are views into the frame's bytes. */
export function readResult(frame: Frame): JobResult | HeldHead {
  const { bytes } = frame;
  const report = readReport(bytes);
  const fields = TAG_BYTES + REPORT_BYTES;
  if (frame.type === FrameType.Done || frame.type === FrameType.Held) {
    const warningsEnd = fields + 4 + bytes.readUInt32LE(fields);
    const einvoiceEnd = warningsEnd + 4 + bytes.readUInt32LE(warningsEnd);
    const warnings = bytes.subarray(fields + 4, warningsEnd);
    const einvoiceWarnings = bytes.subarray(warningsEnd + 4, einvoiceEnd);
    if (frame.type === FrameType.Held)
      return { ...report, kind: 'held-head', warnings, einvoiceWarnings, pdfBytes: bytes.readUInt32LE(einvoiceEnd) };
    return { kind: 'pdf', ...report, warnings, einvoiceWarnings, pdf: bytes.subarray(einvoiceEnd) };
  }
  return { kind: 'failed', ...report, status: bytes.readUInt16LE(fields), errorBody: bytes.subarray(fields + 2) };
}

/** A Rest frame's part of the PDF (a view into the frame's bytes). */
export const restOf = (frame: Frame): Buffer => frame.bytes.subarray(TAG_BYTES);

class FrameError extends Error {
  override name = 'FrameError';
}

/**
 * One buffer lent to one frame at a time and kept from one frame to the
 * next, for frames from `fromBytes` to `toBytes` long: each such frame
 * would otherwise cost an allocation, its page faults and its fill when
 * freed (retention/freed-memory-fill.ts), and, in the server, V8 counts
 * the memory of each buffer it frees late and collects the whole heap for
 * it. The receiver wipes the frame and gives it back (`giveBack`); a frame
 * that comes while the buffer is lent, or of another size, gets a buffer of
 * its own. The buffer stays resident, holding zeros, at the size of the
 * largest such frame so far.
 */
class KeptFrameBuffer {
  private kept: Buffer | undefined;
  /** The view of `kept` lent now, if any. */
  private lent: Buffer | undefined;

  constructor(
    private readonly fromBytes: number,
    private readonly toBytes: number,
  ) {}

  take(size: number): Buffer {
    if (size < this.fromBytes || size > this.toBytes || this.lent) return ownedBuffer(size);
    if (!this.kept || this.kept.length < size) this.kept = ownedBuffer(size);
    this.lent = this.kept.subarray(0, size);
    return this.lent;
  }

  /** Takes the buffer back if `frame` is the one it is lent to now; the receiver has wiped it. */
  giveBack(frame: Frame): void {
    if (frame.bytes === this.lent) this.lent = undefined;
  }
}

/**
 * Results up to this size are read into the buffer the pipe keeps (the
 * server keeps one per worker, at most this much, holding zeros between
 * results): a 53-page report is about 200 KB, a one-page PDF 30 to 60 KB.
 */
const KEPT_RESULT_BYTES = 4 * 1024 * 1024;

/**
 * Collects frames from 'data' chunks (the server's side of the pipe; this
 * is their only reader). Each chunk is copied into the frame's own buffer,
 * then zero-filled and freed (wipeReadChunk), so the only copy left is the
 * one the receiver owns, wipes and gives back (`giveBack`).
 */
export class FrameReader {
  private readonly length = Buffer.alloc(LENGTH_BYTES);
  private lengthFilled = 0;
  private frame: Buffer | undefined;
  private filled = 0;
  private readonly buffers = new KeptFrameBuffer(0, KEPT_RESULT_BYTES);

  constructor(private readonly onFrame: (frame: Frame) => void) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (!this.frame) {
        const take = Math.min(LENGTH_BYTES - this.lengthFilled, chunk.length - at);
        chunk.copy(this.length, this.lengthFilled, at, at + take);
        this.lengthFilled += take;
        at += take;
        if (this.lengthFilled < LENGTH_BYTES) break;
        const size = this.length.readUInt32LE(0);
        if (size < TAG_BYTES || size > MAX_FRAME_BYTES) throw new FrameError(`frame of ${size} bytes`);
        this.frame = this.buffers.take(size);
        this.filled = 0;
        this.lengthFilled = 0;
      }
      const take = Math.min(this.frame.length - this.filled, chunk.length - at);
      chunk.copy(this.frame, this.filled, at, at + take);
      this.filled += take;
      at += take;
      if (this.filled === this.frame.length) {
        const frame = this.frame;
        this.frame = undefined;
        this.onFrame(frameOf(frame));
      }
    }
    wipeReadChunk(chunk);
  }

  /** Takes back a frame's buffer once its receiver has wiped it. */
  giveBack(frame: Frame): void {
    this.buffers.giveBack(frame);
  }

  /** Drops a frame cut off by a closed pipe. */
  discard(): void {
    wipe(this.frame);
    this.frame = undefined;
  }
}

/** Frames from this size on are read into one buffer kept for the next (frameOnRead). */
const KEPT_FRAME_BYTES = 1024 * 1024;

/**
 * Options for `new net.Socket({ fd, onread })` that read frames straight
 * into their own buffers (the worker's side of the pipe): each read is
 * offered exactly the bytes still missing, so no read spans two frames and
 * no intermediate buffer ever holds request content.
 *
 * A large frame (a job with megabytes of data) is read into a buffer kept
 * from one large frame to the next (KeptFrameBuffer): a fresh 9 MB buffer
 * cost the worker about 5 ms per job. It stays resident at the size of the
 * largest job so far (at most a body's 10 MiB and its layout), which the
 * memory cap counts.
 */
export function frameOnRead(onFrame: (frame: Frame) => void): {
  buffer: () => Uint8Array;
  callback: (bytesRead: number) => boolean;
  giveBack: (frame: Frame) => void;
} {
  const length = Buffer.alloc(LENGTH_BYTES);
  let target: Buffer = length;
  let filled = 0;
  const buffers = new KeptFrameBuffer(KEPT_FRAME_BYTES, MAX_FRAME_BYTES);
  return {
    buffer: () => target.subarray(filled),
    callback(bytesRead: number): boolean {
      filled += bytesRead;
      if (filled < target.length) return true;
      if (target === length) {
        const size = length.readUInt32LE(0);
        if (size < TAG_BYTES || size > MAX_FRAME_BYTES) throw new FrameError(`frame of ${size} bytes`);
        target = buffers.take(size);
      } else {
        const frame = target;
        target = length;
        onFrame(frameOf(frame));
      }
      filled = 0;
      return true;
    },
    giveBack: (frame: Frame) => buffers.giveBack(frame),
  };
}
