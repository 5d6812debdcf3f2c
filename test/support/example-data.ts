/**
 * Data for the reference templates in examples/, built to any size: a report
 * with N metrics and a business letter with N body paragraphs. Deterministic
 * (the same arguments give the same data), with realistic values, long names
 * and characters that are markup in Typst (& # $ * _ @ <) so that tests can
 * check they are printed literally. Used by the tests and the benchmarks.
 */

export interface ReportMetric {
  name: string;
  current: string;
  previous: string;
  change: string;
}

export interface ReportData {
  report_title: string;
  generated_date: string;
  summary: string;
  metrics: ReportMetric[];
}

export interface LetterData {
  date: string;
  company: { name: string; address: string; phone: string; email: string };
  recipient: { name: string; title: string; company: string; address: string };
  salutation: string;
  body: string;
  closing: string;
  sender: { name: string; title: string; company: string };
}

/** Text with Typst markup characters that the templates must print as is. */
export const MARKUP_SAMPLE = 'R&D #7: $1,200 *net* _adj_ @ops <draft>';

const METRIC_NAMES = [
  'Revenue',
  'Gross margin',
  'Operating expenses',
  'New customers',
  'Active customers (end of period)',
  'Monthly churn — Starter & Team plans',
  'Average revenue per account',
  'Net Promoter Score',
  'Support tickets opened',
  'Median first response time',
  'Website conversion rate',
  'Headcount (full-time equivalent)',
  // A long name that wraps inside its table cell.
  'Share of enterprise accounts with an executive sponsor, a signed success plan and a quarterly business review held',
  MARKUP_SAMPLE,
];

/** Report data (examples/report.typ) with `metrics` rows. */
export function reportData(metrics: number): ReportData {
  // A fixed-seed pseudo-random generator (MINSTD: seed × 48271 mod 2³¹−1,
  // exact in doubles) so that the data is varied but the same on every run.
  let seed = 20_240_930;
  const next = () => {
    seed = (seed * 48_271) % 2_147_483_647;
    return seed / 2_147_483_647;
  };
  const rows: ReportMetric[] = [];
  for (let i = 0; i < metrics; i++) {
    const base = METRIC_NAMES[i % METRIC_NAMES.length]!;
    // A round number keeps names unique once the list of names repeats.
    const name = i < METRIC_NAMES.length ? base : `${base} (${Math.floor(i / METRIC_NAMES.length) + 1})`;
    const previous = Math.round(500 + next() * 99_500);
    const change = Math.round((next() * 40 - 15) * 10) / 10 || 0.1; // -15.0% to +25.0%, never 0
    const current = Math.round(previous * (1 + change / 100));
    rows.push({
      name,
      current: current.toLocaleString('en-US'),
      previous: previous.toLocaleString('en-US'),
      change: `${change > 0 ? '+' : ''}${change.toFixed(1)}%`,
    });
  }
  return {
    report_title: 'Quarterly Operations Report — Q3 2024',
    generated_date: 'October 7, 2024',
    summary:
      'Revenue grew to $4.82M in Q3, up 9.6% on Q2, driven by the new Enterprise tier. ' +
      `Churn ticked up among Starter & Team plans after the July price change (see ${MARKUP_SAMPLE}); ` +
      'the retention programme targets that segment in Q4. Questions: analytics@example.com.',
    metrics: rows,
  };
}

const LETTER_PARAGRAPHS = [
  'Thank you for meeting with us on September 12 to discuss the renewal of the logistics agreement between our ' +
    "companies. We appreciated the candid discussion of last year's delivery performance and the clear priorities " +
    'your team set out for the coming year.',
  `As agreed, we have revised the proposal. The fixed monthly fee falls to $12,500 (invoice reference #4471), ` +
    `and the service credits now apply from the first missed delivery window rather than the third. The ` +
    `item list uses your internal codes exactly as sent, such as ${MARKUP_SAMPLE} and PART_NO_2231*B, so that ` +
    'your accounts team can match them without conversion.',
  'We also propose a joint review every quarter. Each review would cover on-time delivery, damage rates, ' +
    'the accuracy of our shipment notices and any changes in your volumes that we should plan for. We would ' +
    'send the figures a week in advance so that the meeting can focus on decisions rather than on reading numbers.',
  'Please let us know whether the revised terms meet your expectations. If it would help, we are glad to ' +
    'walk your finance and operations colleagues through the details, in person or by video call, at a time ' +
    'that suits them.',
];

/**
 * Letter data (examples/letter.typ). The body has `paragraphs` paragraphs
 * (default 4, which fits on one page; 12 or more run to a second page),
 * separated by blank lines.
 */
export function letterData(options: { paragraphs?: number } = {}): LetterData {
  const count = options.paragraphs ?? 4;
  const paragraphs: string[] = [];
  for (let i = 0; i < count; i++) paragraphs.push(LETTER_PARAGRAPHS[i % LETTER_PARAGRAPHS.length]!);
  return {
    date: 'October 7, 2024',
    company: {
      name: 'Harbor & Finch Logistics Ltd.',
      address: '1200 Harbor Boulevard, Suite 400\nOakland, CA 94607\nUnited States',
      phone: '+1 (510) 555-0142',
      email: 'contracts@harborfinch.example',
    },
    recipient: {
      name: 'Dr. Margaret Elizabeth Okonkwo-Vandenberghe',
      title: 'Vice President, Supply Chain & Procurement',
      company: 'Northwind Outdoor Equipment, Inc.',
      address: 'Attn: Procurement Office\n88 Lakeside Drive, Building C\nMinneapolis, MN 55401',
    },
    salutation: 'Dear Dr. Okonkwo-Vandenberghe,',
    body: paragraphs.join('\n\n'),
    closing: 'Sincerely,',
    sender: {
      name: 'Daniel R. Whitfield',
      title: 'Director of Client Partnerships',
      company: 'Harbor & Finch Logistics Ltd.',
    },
  };
}
