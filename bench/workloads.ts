/**
 * The benchmark's workloads: a request body (the exact bytes sent over HTTP)
 * for each of W1..W4. Templates come from examples/; the data is generated
 * here, deterministically, so every run sends the same bytes.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface Workload {
  id: 'W1' | 'W2' | 'W3' | 'W4';
  description: string;
  template: string;
  /** `JSON.stringify({ data, template })` as UTF-8: what the service receives. */
  body: Buffer;
}

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));
const readExample = (name: string) => readFileSync(EXAMPLES + name, 'utf8');

/** Data for examples/letter.typ: one page. */
export function letterData(): Record<string, unknown> {
  return {
    date: 'October 7, 2024',
    company: {
      name: 'Northwind Analytics Ltd',
      address: '14 Harbour Street\nSuite 300\nBristol BS1 4QA',
      phone: '+44 117 496 0123',
      email: 'office@northwind.example',
    },
    recipient: {
      name: 'Ms. Dana Jones',
      title: 'Head of Procurement',
      company: 'Contoso Retail & Co.',
      address: '221 Market Road\nLeeds LS1 6AB',
    },
    salutation: 'Dear Ms. Jones,',
    body: [
      'Thank you for meeting us last week to discuss the renewal of your analytics subscription. As agreed, this letter sets out the terms we discussed and the next steps on both sides.',
      'From 1 January the subscription covers all 14 of your stores and the online shop, with daily data refreshes and the new forecasting module included at no extra cost for the first year. The annual fee stays at £48,000, payable quarterly in advance.',
      'Our onboarding team will contact your IT department within two weeks to schedule the migration of the historical data. We expect the work to take about three days and to cause no interruption to the existing reports.',
      'Please sign and return the enclosed copy of the agreement by 30 November. Do not hesitate to call me if anything in it needs clarifying.',
    ].join('\n\n'),
    closing: 'Sincerely,',
    sender: { name: 'Alex Morgan', title: 'Account Director', company: 'Northwind Analytics Ltd' },
  };
}

/** Data for examples/report.typ with `metrics` rows (200: about 5 pages; 2,000: about 45). */
export function reportData(metrics: number): Record<string, unknown> {
  const names = ['Revenue', 'Gross margin', 'New customers', 'Churn', 'Support tickets', 'Net Promoter Score', 'Uptime'];
  const rows = Array.from({ length: metrics }, (_, i) => {
    const previous = 1000 + ((i * 7919) % 9000);
    const current = previous + ((i * 104729) % 400) - 150;
    const change = (((current - previous) / previous) * 100).toFixed(1);
    return {
      name: `${names[i % names.length]} — region ${1 + (i % 40)}, segment ${String.fromCharCode(65 + (i % 26))}`,
      current: current.toLocaleString('en-US'),
      previous: previous.toLocaleString('en-US'),
      change: `${Number(change) >= 0 ? '+' : ''}${change}%`,
    };
  });
  return {
    report_title: 'Quarterly Operations Report — Q3 2024',
    generated_date: 'October 7, 2024',
    summary:
      'Revenue grew in Q3, driven by the new Enterprise tier and a strong back-to-school season in retail. ' +
      'Gross margin held steady. Support volume rose with the larger customer base, but the median ' +
      'first-response time improved thanks to the new triage rota.',
    metrics: rows,
  };
}

/** A `data` object of about `bytes` bytes of JSON, of which BULK_TEMPLATE prints a few fields. */
export function bulkData(bytes: number): Record<string, unknown> {
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
export const BULK_DATA_BYTES = 9 * 1024 * 1024;

const bodyOf = (data: Record<string, unknown>, template: string) => Buffer.from(JSON.stringify({ data, template }));

export function workloads(): Workload[] {
  const letter = readExample('letter.typ');
  const report = readExample('report.typ');
  return [
    { id: 'W1', description: 'business letter, 1 page', template: letter, body: bodyOf(letterData(), letter) },
    { id: 'W2', description: 'report, 200 metrics', template: report, body: bodyOf(reportData(200), report) },
    { id: 'W3', description: 'report, 2,000 metrics', template: report, body: bodyOf(reportData(2000), report) },
    {
      id: 'W4',
      description: '9 MB data, a little printed',
      template: BULK_TEMPLATE,
      body: bodyOf(bulkData(BULK_DATA_BYTES), BULK_TEMPLATE),
    },
  ];
}
