/**
 * GET /metrics: Prometheus text whose values move with the requests made:
 * counts by route and status, durations, sizes, pool gauges, restarts by
 * reason; labels that never carry what a request sent; METRICS_PORT.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { delta, METRIC_PREFIX as P, requestsAnswered as requests, scrape } from './support/metrics.js';
import { exchange } from './support/openapi.js';
import { readAll } from './support/raw-http.js';
import { generate, startService, TEST_KEY, waitReady, type Service } from './support/service.js';

const RUNAWAY = '#for i in range(100000) { for j in range(100000) { } }';
const GENERATE = '/v1/pdf/generate';

describe('metrics', () => {
  let service: Service;
  let metricsUrl: string;
  before(async () => {
    service = await startService({ WORKERS: '1', QUEUE_LIMIT: '1', COMPILE_TIMEOUT_MS: '1500', WORKER_MAX_JOBS: '3' });
    metricsUrl = `${service.url}/metrics`;
  });
  after(async () => {
    await service.stop();
  });

  it('serves Prometheus text with every family, without a key', async () => {
    const { text, contentType } = await scrape(metricsUrl);
    assert.match(contentType ?? '', /^text\/plain; version=0\.0\.4/);
    for (const family of [
      'http_requests_total counter',
      'http_request_duration_seconds histogram',
      'compile_duration_seconds histogram',
      'http_request_size_bytes histogram',
      'http_response_size_bytes histogram',
      'queue_depth gauge',
      'workers_busy gauge',
      'workers_idle gauge',
      'worker_restarts_total counter',
      'rate_limited_requests_total counter',
      'process_cpu_seconds_total counter',
      'process_resident_memory_bytes gauge',
      'nodejs_heap_size_used_bytes gauge',
      'nodejs_eventloop_busy_seconds_total counter',
    ]) {
      assert.ok(text.includes(`# TYPE ${P}${family}`), family);
    }
    // The event loop's delay is not sampled: that would wake the server every 10 ms (test/idle.test.ts).
    assert.ok(!text.includes(`${P}nodejs_eventloop_lag_p99_seconds`));
    for (const reason of ['timeout', 'memory', 'crash', 'recycle']) {
      assert.ok(text.includes(`${P}worker_restarts_total{reason="${reason}"} 0`), reason);
    }
  });

  it('counts requests of each status, their durations and sizes, compiles and recycles', async () => {
    await waitReady(service, 1);
    const before = (await scrape(metricsUrl)).samples;
    let sentBytes = 0;
    let pdfBytes = 0;
    const post = async (body: string, headers: Record<string, string> = {}, key?: string) => {
      sentBytes += Buffer.byteLength(body);
      const res = await generate(service, body, { headers, key });
      const bytes = await res.arrayBuffer();
      return { status: res.status, bytes: bytes.byteLength };
    };
    // Three good compiles and a template error: four jobs, the third recycles the worker (WORKER_MAX_JOBS=3).
    for (let i = 0; i < 3; i++) {
      const answer = await post(JSON.stringify({ data: { i }, template: `page #data.i` }));
      assert.equal(answer.status, 200);
      pdfBytes += answer.bytes;
    }
    assert.equal((await post(JSON.stringify({ data: {}, template: '#(' }))).status, 400);
    assert.equal((await post('{"data":{},"template":"x"}', {}, 'wrong')).status, 401);
    assert.equal((await post('x', { 'content-type': 'text/plain' })).status, 415);
    assert.equal((await fetch(`${service.url}/no/such/path?q=1`)).status, 404);
    const tooLarge = await exchange(`${service.url}${GENERATE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': 11 * 1024 * 1024 },
      headersOnly: true,
    });
    assert.equal(tooLarge.status, 413);
    sentBytes += 11 * 1024 * 1024;
    await waitReady(service, 1);

    const after = (await scrape(metricsUrl)).samples;
    assert.equal(delta(before, after, requests('POST', GENERATE, 200)), 3);
    assert.equal(delta(before, after, requests('POST', GENERATE, 400)), 1);
    assert.equal(delta(before, after, requests('POST', GENERATE, 401)), 1);
    assert.equal(delta(before, after, requests('POST', GENERATE, 415)), 1);
    assert.equal(delta(before, after, requests('POST', GENERATE, 413)), 1);
    assert.equal(delta(before, after, requests('GET', 'unmatched', 404)), 1);
    assert.equal(delta(before, after, `${P}http_request_duration_seconds_count{route="${GENERATE}"}`), 7);
    assert.ok(delta(before, after, `${P}http_request_duration_seconds_sum{route="${GENERATE}"}`) > 0);
    assert.equal(delta(before, after, `${P}compile_duration_seconds_count`), 3, 'successful compiles are timed');
    assert.ok(delta(before, after, `${P}compile_duration_seconds_sum`) > 0);
    assert.equal(delta(before, after, `${P}http_request_size_bytes_count{route="${GENERATE}"}`), 7);
    assert.equal(delta(before, after, `${P}http_request_size_bytes_sum{route="${GENERATE}"}`), sentBytes);
    assert.ok(delta(before, after, `${P}http_response_size_bytes_sum{route="${GENERATE}"}`) >= pdfBytes);
    const busy = delta(before, after, `${P}nodejs_eventloop_busy_seconds_total`);
    assert.ok(busy > 0 && busy < 60, `the event loop was busy ${busy} s answering them`);
    assert.equal(delta(before, after, `${P}http_request_size_bytes_bucket{le="16777216",route="${GENERATE}"}`), 7);
    assert.equal(delta(before, after, `${P}http_request_size_bytes_bucket{le="4194304",route="${GENERATE}"}`), 6);
    assert.equal(delta(before, after, `${P}worker_restarts_total{reason="recycle"}`), 1);
    assert.equal(delta(before, after, `${P}worker_restarts_total{reason="crash"}`), 0);
  });

  it('shows the pool busy and the queue used, then counts 503 (with its reason), 422 and 500 with their restart reasons', async () => {
    await waitReady(service, 1);
    const before = (await scrape(metricsUrl)).samples;
    const busy = generate(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 300));
    const queued = generate(service, { data: {}, template: 'queued' });
    await new Promise((r) => setTimeout(r, 100));
    const during = (await scrape(metricsUrl)).samples;
    assert.equal(during.get(`${P}workers_busy`), 1);
    assert.equal(during.get(`${P}workers_idle`), 0);
    assert.equal(during.get(`${P}queue_depth`), 1);
    assert.equal((await generate(service, { data: {}, template: 'refused' })).status, 503);
    assert.equal((await busy).status, 422);
    assert.equal((await queued).status, 200);
    await waitReady(service, 1);

    const crashing = generate(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 300));
    for (const pid of service.workerPids()) process.kill(pid, 'SIGKILL');
    assert.equal((await crashing).status, 500);
    await waitReady(service, 1);

    const after = (await scrape(metricsUrl)).samples;
    assert.equal(after.get(`${P}workers_busy`), 0);
    assert.equal(after.get(`${P}workers_idle`), 1);
    assert.equal(after.get(`${P}queue_depth`), 0);
    assert.equal(delta(before, after, requests('POST', GENERATE, 503)), 1);
    assert.equal(delta(before, after, `${P}unavailable_total{reason="queue_full"}`), 1, 'the 503 counted under its reason');
    assert.match(service.output(), /"status":503,[^\n]*"unavailable":"queue_full"/, 'and its log line names it');
    assert.equal(delta(before, after, requests('POST', GENERATE, 422)), 1);
    assert.equal(delta(before, after, requests('POST', GENERATE, 500)), 1);
    assert.equal(delta(before, after, requests('POST', GENERATE, 200)), 1);
    assert.equal(delta(before, after, `${P}worker_restarts_total{reason="timeout"}`), 1);
    assert.equal(delta(before, after, `${P}worker_restarts_total{reason="killed"}`), 1, 'a SIGKILL from outside, not a crash');
    assert.equal(delta(before, after, `${P}worker_restarts_total{reason="crash"}`), 0);
  });

  it('never puts request content, URLs, request ids or keys in a label', async () => {
    const marker = `mk${Math.random().toString(36).slice(2)}`;
    await generate(service, { data: { [marker]: marker }, template: `#data.${marker} ${marker}` }, { headers: { 'x-request-id': marker } });
    await generate(service, { data: {}, template: `#panic("${marker}")` });
    await generate(service, { data: {}, template: 'x' }, { key: marker });
    await fetch(`${service.url}/${marker}?${marker}=1`);
    const { text } = await scrape(metricsUrl);
    assert.ok(!text.includes(marker));
    assert.ok(!text.includes(TEST_KEY));
    const labels = [...text.matchAll(/(\w+)="([^"]*)"/g)].map((m) => m[1]!);
    assert.deepEqual(
      [...new Set(labels)].filter(
        (l) =>
          ![
            'method',
            'route',
            'status',
            'reason',
            'key',
            'le',
            'version',
            'major',
            'minor',
            'patch',
            'type',
            'space',
            'kind',
            'written_by',
          ].includes(l),
      ),
      [],
    );
  });
});

describe('metrics on their own port (METRICS_PORT)', () => {
  it('serves /metrics there and not on the API port', async () => {
    const service = await startService({ WORKERS: '1', METRICS_PORT: '0' });
    try {
      const match = /metrics on (http:\/\/\S+\/metrics)/.exec(service.output());
      assert.ok(match, service.output());
      assert.equal((await generate(service, { data: {}, template: 'x' })).status, 200);
      const { samples } = await scrape(match[1]!);
      assert.equal(samples.get(requests('POST', GENERATE, 200)), 1);
      assert.equal((await fetch(`${service.url}/metrics`)).status, 404);
      const doc = (await (await fetch(`${service.url}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
      assert.equal(doc.paths['/metrics'], undefined, 'the document describes only the API port');
      // A scraper that half-closes once its request is sent still gets the metrics.
      const { hostname, port } = new URL(match[1]!);
      const socket = connect(Number(port), hostname);
      const answer = readAll(socket);
      socket.end('GET /metrics HTTP/1.1\r\nhost: localhost\r\n\r\n');
      const scraped = await answer;
      assert.equal(scraped.status, 200);
      assert.match(scraped.body, /^typst_pdf_http_requests_total\{/m);
    } finally {
      assert.equal(await service.stop(), 0);
    }
  });
});
