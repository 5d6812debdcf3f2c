/**
 * The benchmark's workloads: a request body (the exact bytes sent over HTTP)
 * for each of W1..W4. Templates and the letter's data come from examples/;
 * the report's data comes from the generator the golden tests use, and W4's
 * is made here; all deterministic, so every run sends the same bytes.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EngineId } from '../src/engines.js';
import { reportData } from '../test/support/example-data.js';

export interface Workload {
  /**
   * W1..W4 on the default engine (Typst 0.11); `W1-0.14` and `W2-0.14` are W1 and W2 on Typst 0.14;
   * `E1` is the e-invoice example on Typst 0.14 as PDF/A-3b, `E1-fx` the same finished as a Factur-X invoice.
   */
  id: string;
  description: string;
  template: string;
  /** The engine the body names (`typst`), which the floor compiles with too. */
  engine: EngineId;
  /** `JSON.stringify({ data, template })` as UTF-8 (with `typst` for 0.14): what the service receives. */
  body: Buffer;
}

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));
const readExample = (name: string) => readFileSync(EXAMPLES + name, 'utf8');

/** A `data` object of about `bytes` bytes of JSON, of which BULK_TEMPLATE prints a few fields. */
function bulkData(bytes: number): Record<string, unknown> {
  const records: Record<string, unknown>[] = [];
  let size = 200;
  for (let i = 0; size < bytes; i++) {
    const record = {
      id: i,
      sku: `SKU-${(100000 + i).toString(36).toUpperCase()}`,
      description: `Item ${i}: replacement part for assembly line ${i % 97}, batch ${(i * 31) % 1000}`,
      quantity: (i * 13) % 250,
      price: Math.round(((i * 7) % 10000) * 1.37) / 100,
      tags: ['stock', i % 2 ? 'north' : 'south', `bin-${i % 50}`],
    };
    size += JSON.stringify(record).length + 1;
    records.push(record);
  }
  return { title: 'Inventory extract', owner: 'Warehouse 7', records };
}

const BULK_TEMPLATE = `#set text(font: "Helvetica", size: 11pt)
= #data.title
Owner: #data.owner

Records in the extract: #data.records.len()

#table(columns: 3, [*SKU*], [*Quantity*], [*Price*],
  ..data.records.slice(0, 5).map(r => (r.sku, str(r.quantity), str(r.price))).flatten())
`;

/** 9 MB of data: below the 10 MB body limit with room for the template. */
const BULK_DATA_BYTES = 9 * 1024 * 1024;

const bodyOf = (data: object, template: string, typst?: EngineId, pdf?: object) =>
  Buffer.from(JSON.stringify({ data, template, typst, pdf }));

/**
 * A one-line document whose compile only counts to about `iterations`
 * (rounded to a thousand) in loops of the template: a small body and a
 * small PDF that take as long to compile as a workload. What the server
 * spends on it is what any request costs it when its worker computes for
 * that long (run.ts: "a request that waits"). Two plain loops, so that the
 * worker's memory stays as it was: a `fold` over a range held about 2 KB an
 * iteration on Typst 0.11 (a 700-ms wait grew the worker by 550 MB), and
 * the pool looks more often at a worker that grows (pool.ts), which no
 * workload does.
 */
export function waitingBody(engine: EngineId, iterations: number): Buffer {
  const template = `#for i in range(${Math.round(iterations / 1000)}) { for j in range(1000) { } }\nCounted.`;
  return bodyOf({}, template, engine === '0.14' ? engine : undefined);
}

export function workloads(): Workload[] {
  const letter = readExample('letter.typ');
  const einvoice = readExample('einvoice.typ');
  const einvoiceData = JSON.parse(readExample('einvoice.json'));
  const report = readExample('report.typ');
  // Without its logo (`logo`), so W1 stays a text-only page comparable across versions.
  const letterData = { ...JSON.parse(readExample('letter.json')), logo: undefined };
  return [
    { id: 'W1', description: 'business letter, 1 page', template: letter, engine: '0.11', body: bodyOf(letterData, letter) },
    { id: 'W2', description: 'report, 200 metrics', template: report, engine: '0.11', body: bodyOf(reportData(200), report) },
    { id: 'W3', description: 'report, 2,000 metrics', template: report, engine: '0.11', body: bodyOf(reportData(2000), report) },
    {
      id: 'W4',
      description: '9 MB data, a little printed',
      template: BULK_TEMPLATE,
      engine: '0.11',
      body: bodyOf(bulkData(BULK_DATA_BYTES), BULK_TEMPLATE),
    },
    // The same W1 and W2 on Typst 0.14, against the floor of that engine.
    { id: 'W1-0.14', description: 'letter on Typst 0.14', template: letter, engine: '0.14', body: bodyOf(letterData, letter, '0.14') },
    { id: 'W2-0.14', description: 'report on Typst 0.14', template: report, engine: '0.14', body: bodyOf(reportData(200), report, '0.14') },
    // The e-invoice example as PDF/A-3b, then finished as a Factur-X invoice: the difference is the XSD check and the XMP update
    // (and the business rules, when the bench runs with EINVOICE_RULES set).
    {
      id: 'E1',
      description: 'e-invoice example, PDF/A-3b',
      template: einvoice,
      engine: '0.14',
      body: bodyOf(einvoiceData, einvoice, '0.14', { standard: 'a-3b' }),
    },
    {
      id: 'E1-fx',
      description: 'e-invoice example, Factur-X EN 16931',
      template: einvoice,
      engine: '0.14',
      body: bodyOf(einvoiceData, einvoice, '0.14', { standard: 'a-3b', einvoice: { profile: 'EN 16931' } }),
    },
  ];
}
