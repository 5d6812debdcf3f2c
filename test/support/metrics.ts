/** Reads a Prometheus text exposition into `name{labels}` -> value. */

/** The prefix of every metric the service exposes. */
export const METRIC_PREFIX = 'typst_pdf_';

/** The key of the count of requests answered with `status`, as parseMetrics gives it. */
export const requestsAnswered = (method: string, route: string, status: number) =>
  `${METRIC_PREFIX}http_requests_total{method="${method}",route="${route}",status="${status}"}`;

export type Samples = Map<string, number>;

export function parseMetrics(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

export async function scrape(url: string): Promise<{ text: string; samples: Samples; contentType: string | null }> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  const text = await res.text();
  return { text, samples: parseMetrics(text), contentType: res.headers.get('content-type') };
}

/** How much a sample grew between two scrapes (absent counts as 0). */
export function delta(before: Samples, after: Samples, key: string): number {
  return (after.get(key) ?? 0) - (before.get(key) ?? 0);
}
