/**
 * What a signature costs (`pdf.signature`): W1 on each engine, signed and
 * not, over HTTP at c=1 on a service with a throw-away identity (RSA 2048):
 * p50 latency and the server's CPU per request (utime + stime of the server
 * process from /proc), one request of each in turn, in alternating order, so
 * that the neighbours' load falls on both alike. Target: at most 2 ms more for the signed one-page
 * document. The signing alone (PdfSigner.sign on that PDF, in this process)
 * is timed too, which the machine's load disturbs least.
 */
import { loadSigningIdentity } from '../src/finish/signature-identity.js';
import { PdfSigner } from '../src/finish/signature-signer.js';
import { makeTestIdentity } from '../test/support/signing-identity.js';
import { processCpuMs } from './cpu.js';
import { ms, table } from './report.js';
import { startBenchService } from './service.js';
import { TEST_KEY } from '../test/support/service.js';
import { median } from './stats.js';
import { workloads } from './workloads.js';

const SIGNING_TARGET_MS = 2;

export interface SigningFigures {
  id: string;
  p50Ms: number;
  signedP50Ms: number;
  serverCpuMs: number;
  signedServerCpuMs: number;
  /** PdfSigner.sign alone, on this workload's PDF: median ms. */
  signMs: number;
  pdfBytes: number;
  signedPdfBytes: number;
}

/** `body` with `"pdf":{"signature":{...}}` added. */
function signedBody(body: Buffer): Buffer {
  const request = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  return Buffer.from(JSON.stringify({ ...request, pdf: { signature: { reason: 'Approved', location: 'Berlin' } } }));
}

export async function measureSigning(blocks: number, perBlock: number, log: (message: string) => void): Promise<SigningFigures[]> {
  const identity = makeTestIdentity();
  const service = await startBenchService(1, identity.env);
  try {
    const signer = new PdfSigner(await loadSigningIdentity(identity.p12, identity.passwordFile));
    const figures: SigningFigures[] = [];
    for (const workload of workloads().filter((w) => w.id === 'W1' || w.id === 'W1-0.14')) {
      const variants = [
        { body: workload.body, latencies: [] as number[], cpu: 0 },
        { body: signedBody(workload.body), latencies: [] as number[], cpu: 0 },
      ];
      for (const v of variants) for (let i = 0; i < 3; i++) await pdfOf(service.url, v.body);
      const serverPid = service.process.pid!;
      const count = blocks * perBlock;
      for (let i = 0; i < count; i++) {
        for (const v of i % 2 ? [...variants].reverse() : variants) {
          const before = processCpuMs(serverPid);
          const started = performance.now();
          await pdfOf(service.url, v.body);
          v.latencies.push(performance.now() - started);
          v.cpu += processCpuMs(serverPid) - before;
        }
      }
      const plain = await pdfOf(service.url, variants[0]!.body);
      const signed = await pdfOf(service.url, variants[1]!.body);
      const times: number[] = [];
      for (let i = 0; i < 300; i++) {
        const started = performance.now();
        (await signer.sign(plain, Buffer.alloc(0), {})).fill(0);
        times.push(performance.now() - started);
      }
      const figure: SigningFigures = {
        id: workload.id,
        p50Ms: median(variants[0]!.latencies),
        signedP50Ms: median(variants[1]!.latencies),
        serverCpuMs: variants[0]!.cpu / count,
        signedServerCpuMs: variants[1]!.cpu / count,
        signMs: median(times),
        pdfBytes: plain.length,
        signedPdfBytes: signed.length,
      };
      log(
        `  ${figure.id}: p50 ${ms(figure.p50Ms)} -> ${ms(figure.signedP50Ms)} ms signed; server CPU ${figure.serverCpuMs.toFixed(2)} -> ` +
          `${figure.signedServerCpuMs.toFixed(2)} ms/req; signing alone ${figure.signMs.toFixed(2)} ms`,
      );
      figures.push(figure);
    }
    return figures;
  } finally {
    await service.stop();
    identity.dispose();
  }
}

async function pdfOf(url: string, body: Buffer): Promise<Buffer> {
  const res = await fetch(`${url}/v1/pdf/generate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
    body: new Uint8Array(body),
  });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

export function describeSigning(figures: SigningFigures[]): string {
  return table(
    [
      'Workload',
      'PDF bytes (signed)',
      'c=1 p50 ms (signed)',
      'p50 added',
      'server CPU ms/req (signed)',
      'CPU added',
      'signing alone ms',
      `≤ ${SIGNING_TARGET_MS} ms added`,
    ],
    figures.map((f) => [
      f.id,
      `${f.pdfBytes} (${f.signedPdfBytes})`,
      `${ms(f.p50Ms)} (${ms(f.signedP50Ms)})`,
      (f.signedP50Ms - f.p50Ms).toFixed(2),
      `${f.serverCpuMs.toFixed(2)} (${f.signedServerCpuMs.toFixed(2)})`,
      (f.signedServerCpuMs - f.serverCpuMs).toFixed(2),
      f.signMs.toFixed(2),
      f.signedP50Ms - f.p50Ms <= SIGNING_TARGET_MS && f.signedServerCpuMs - f.serverCpuMs <= SIGNING_TARGET_MS ? 'yes' : 'no',
    ]),
  );
}
