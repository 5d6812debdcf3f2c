/**
 * A PDF of WORKER_WRITES_PDF_BYTES or more (32 KiB here, 512 KiB by
 * default) is written to the client's connection by the
 * worker that made it (src/http/worker-written-body.ts; src/render/pool.ts,
 * PdfDelivery), on a real service: the client reads the same answer as
 * from the server, answers on one connection keep their order, a reader
 * that takes nothing for a while gets through the server what its
 * connection did not take at once, and a client that left has its PDF
 * dropped while the worker goes on. `typst_pdf_pdf_bytes_total` says who
 * wrote the bytes; WORKER_WRITES_PDF_BYTES=0 leaves every PDF to the server.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { scrape } from './support/metrics.js';
import { parsePdf } from './support/pdf.js';
import { pdfAttachment, pdfText } from './support/poppler.js';
import { head, open } from './support/raw-http.js';
import { generate, type Service, startService } from './support/service.js';

/** PDFs from this size on are written by their worker in these tests: the reports below are larger, the letter smaller. */
const HELD_FROM = 32 * 1024;

/** A report of `rows` lines, about 70 bytes of PDF a line: 900 rows are about 45 KB. */
function report(rows: number, label: string): { data: { rows: number }; template: string } {
  return { data: { rows }, template: `#for i in range(data.rows) [Row #i of ${label}, #lorem(12)\n\n]` };
}

/** One HTTP/1.1 answer of a connection's bytes, from `at`: its status, head, and the body its Content-Length gives. */
function answerAt(bytes: Buffer, at: number): { status: number; head: string; body: Buffer; end: number } | undefined {
  const split = bytes.indexOf('\r\n\r\n', at);
  if (split < 0) return undefined;
  const headText = bytes.subarray(at, split).toString('latin1');
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(headText)?.[1]);
  const end = split + 4 + length;
  if (!Number.isFinite(length) || bytes.length < end) return undefined;
  return { status: Number(headText.slice(9, 12)), head: headText, body: bytes.subarray(split + 4, end), end };
}

/** Every whole answer in a connection's bytes, in order. */
function answersOf(bytes: Buffer): { status: number; head: string; body: Buffer }[] {
  const answers = [];
  for (let at = 0, answer = answerAt(bytes, 0); answer; at = answer.end, answer = answerAt(bytes, at)) answers.push(answer);
  return answers;
}

/** Sends `bodies` on one keep-alive connection, all at once, and collects what comes back until all answers are whole; reads nothing before `readFrom` says so. */
async function pipelined(service: Service, bodies: unknown[], readFrom?: () => Promise<boolean>): Promise<Buffer> {
  const socket: Socket = await open(service);
  const chunks: Buffer[] = [];
  if (readFrom) socket.pause();
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  for (const body of bodies) {
    const bytes = Buffer.from(JSON.stringify(body));
    socket.write(head({ 'content-length': bytes.length, connection: 'keep-alive' }));
    socket.write(bytes);
  }
  if (readFrom) {
    while (!(await readFrom())) await sleep(50);
    socket.resume();
  }
  const deadline = Date.now() + 60_000;
  while (answersOf(Buffer.concat(chunks)).length < bodies.length && Date.now() < deadline) await sleep(20);
  socket.destroy();
  return Buffer.concat(chunks);
}

/** Bytes of PDFs written by the workers and by the server so far. */
async function bytesWrittenBy(service: Service): Promise<{ worker: number; server: number }> {
  const { samples } = await scrape(`${service.url}/metrics`);
  return {
    worker: samples.get('typst_pdf_pdf_bytes_total{written_by="worker"}') ?? Number.NaN,
    server: samples.get('typst_pdf_pdf_bytes_total{written_by="server"}') ?? Number.NaN,
  };
}

describe('a PDF its worker writes to the connection', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '2', WORKER_WRITES_PDF_BYTES: String(HELD_FROM) });
  });
  after(() => service.stop());

  const writtenBy = () => bytesWrittenBy(service);

  it('is the whole answer, as its head announces it, and no byte of it passes the server', async () => {
    const before = await writtenBy();
    const res = await generate(service, report(900, 'the large one'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    assert.ok(res.headers.get('x-request-id'), 'the hooks of every answer ran');
    const pdf = Buffer.from(await res.arrayBuffer());
    assert.equal(res.headers.get('content-length'), String(pdf.length));
    assert.ok(pdf.length >= HELD_FROM, `${pdf.length} bytes`);
    assert.ok((await parsePdf(pdf)).pages > 10);
    assert.match(pdfText(pdf), /Row 399 of the large one/);
    const after = await writtenBy();
    assert.equal(after.worker - before.worker, pdf.length, 'written by the worker');
    assert.equal(after.server - before.server, 0, 'none by the server');
  });

  it('keeps the order of pipelined answers, large and small, each whole', async () => {
    // No label with a ligature Typst would set ("fi"): the text is matched as pdftotext reads it.
    const labels = ['alpha', 'bravo', 'charlie', 'delta'];
    const rows = [900, 5, 1500, 900];
    const before = await writtenBy();
    const answers = answersOf(
      await pipelined(
        service,
        labels.map((label, i) => report(rows[i]!, label)),
      ),
    );
    assert.equal(answers.length, labels.length);
    let large = 0;
    for (const [i, answer] of answers.entries()) {
      assert.equal(answer.status, 200, answer.head);
      assert.match(pdfText(answer.body), new RegExp(`Row ${rows[i]! - 1} of ${labels[i]}`), `answer ${i} is the ${labels[i]}`);
      if (answer.body.length >= HELD_FROM) large += answer.body.length;
    }
    assert.ok(large > 0, 'some were large');
    const after = await writtenBy();
    // Those behind an answer still going out when they were ready came through the server, whole.
    assert.equal(
      after.worker - before.worker + after.server - before.server,
      answers.reduce((sum, a) => sum + a.body.length, 0),
    );
  });

  it('serves a reader that takes nothing for a while: what its connection did not take comes through the server', async () => {
    // More than a loopback connection takes while nothing reads it: its send buffer, at most net.ipv4.tcp_wmem's maximum (4 MiB by default).
    const blob = randomBytes(7 * 1024 * 1024);
    const body = {
      data: {},
      template:
        '= Large\n#pdf.attach("blob.bin", read("blob.bin", encoding: none), mime-type: "application/octet-stream", relationship: "supplement")',
      assets: { 'blob.bin': blob.toString('base64') },
      typst: '0.14',
    };
    const before = await writtenBy();
    // Nothing is read until the PDF is counted: the worker has written what the connection took, and handed over the rest.
    const counted = async () => {
      const now = await writtenBy();
      return now.worker + now.server > before.worker + before.server;
    };
    const [answer, ...more] = answersOf(await pipelined(service, [body], counted));
    assert.equal(more.length, 0);
    assert.equal(answer?.status, 200, answer?.head);
    assert.ok(pdfAttachment(answer!.body, 'blob.bin').equals(blob), 'the attachment whole');
    const after = await writtenBy();
    assert.ok(after.worker - before.worker > 0, 'the worker wrote what the connection took');
    assert.ok(after.server - before.server > 0, 'the server wrote the rest');
    assert.equal(after.worker - before.worker + after.server - before.server, answer!.body.length);
  });

  it('is dropped when its client left during the compile, and the workers go on', async () => {
    const before = await writtenBy();
    const socket = await open(service);
    const bytes = Buffer.from(JSON.stringify(report(3000, 'the abandoned one')));
    socket.write(head({ 'content-length': bytes.length }));
    socket.write(bytes);
    await sleep(100);
    // A reset: the client is gone. (A client that only half-closes, as destroy() does here, is answered:
    // client-errors.ts, answerHalfClosedClients; the first write then finds the connection reset, or not.)
    socket.resetAndDestroy();
    // Two at once: both workers are free again, the one that compiled for the client gone without waiting for a guard.
    const started = Date.now();
    const [a, b] = await Promise.all([generate(service, report(400, 'next')), generate(service, report(400, 'next'))]);
    assert.ok(Date.now() - started < 5000, `answered in ${Date.now() - started} ms`);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const lengths = (await Promise.all([a.arrayBuffer(), b.arrayBuffer()])).map((pdf) => pdf.byteLength);
    const after = await writtenBy();
    assert.equal(after.worker - before.worker + after.server - before.server, lengths[0]! + lengths[1]!, 'the abandoned PDF was not sent');
  });
});

describe('WORKER_WRITES_PDF_BYTES=0', () => {
  it('has the server send every PDF, large ones too', async () => {
    const service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1', WORKER_WRITES_PDF_BYTES: '0' });
    try {
      const res = await generate(service, report(900, 'the large one'));
      assert.equal(res.status, 200);
      const pdf = Buffer.from(await res.arrayBuffer());
      assert.ok(pdf.length >= HELD_FROM, `${pdf.length} bytes`);
      assert.match(pdfText(pdf), /Row 899 of the large one/);
      assert.deepEqual(await bytesWrittenBy(service), { worker: 0, server: pdf.length });
    } finally {
      await service.stop();
    }
  });
});
