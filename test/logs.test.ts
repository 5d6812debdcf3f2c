/**
 * The request log: one JSON line per request with its id (the digest of the
 * client's X-Request-Id, which is echoed back, or a new one), method, route, status, times,
 * key name and sizes, and nothing of what the request carried. LOG_LEVEL.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { generate, startService, TEST_KEY, logsWritten } from './support/service.js';

type Line = Record<string, unknown>;

function logLines(output: string): Line[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

describe('request log', () => {
  it('writes one line per request with id, route, status, times, key name and sizes, and no content', async () => {
    const service = await startService({ API_KEYS: `${TEST_KEY} name=billing`, LOG_LEVEL: 'info' });
    try {
      const marker = `content${Math.random().toString(36).slice(2)}`;
      const body = JSON.stringify({ data: { secret: marker }, template: `= ${marker}\n#data.secret` });
      const ok = await generate(service, body, { headers: { 'x-request-id': 'req-log-1' } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-request-id'), 'req-log-1', 'the request id is echoed');
      const pdf = Buffer.from(await ok.arrayBuffer());
      const failed = await generate(service, { data: {}, template: `#panic("${marker}")` }, { headers: { 'x-request-id': 'req-log-2' } });
      assert.equal(failed.status, 400);
      assert.ok((await failed.text()).includes(marker), 'the Typst message goes to the client only');
      const fresh = await fetch(`${service.url}/healthz`);
      const freshId = fresh.headers.get('x-request-id');
      assert.match(freshId ?? '', /^[0-9a-f-]{36}$/, 'a request id is made when none is sent');
      const unsafe = await fetch(`${service.url}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
      assert.notEqual(unsafe.headers.get('x-request-id'), 'bad id with spaces', 'an unsafe id is replaced');
      await logsWritten();

      const lines = logLines(service.output()).filter((l) => l.msg === 'request');
      // A sent id is logged as its digest: the log holds nothing a request sent.
      const logged = (sent: string) => `sha256:${createHash('sha256').update(sent).digest('hex').slice(0, 32)}`;
      const line = lines.find((l) => l.reqId === logged('req-log-1'));
      assert.ok(line, service.output());
      assert.equal(lines.filter((l) => l.reqId === logged('req-log-1')).length, 1, 'one line per request');
      assert.equal(line.method, 'POST');
      assert.equal(line.route, '/v1/pdf/generate');
      assert.equal(line.status, 200);
      assert.equal(typeof line.ms, 'number');
      assert.equal(typeof line.compileMs, 'number');
      assert.equal(line.key, 'billing');
      assert.equal(line.requestBytes, Buffer.byteLength(body));
      assert.equal(line.responseBytes, pdf.length);
      assert.equal(lines.find((l) => l.reqId === logged('req-log-2'))?.status, 400);
      assert.ok(lines.some((l) => l.reqId === freshId && l.route === '/healthz'));

      const output = service.output();
      assert.ok(!output.includes(marker), 'no data, template or Typst message in the log');
      assert.ok(!output.includes(TEST_KEY), 'no key in the log');
      assert.ok(!output.includes('req-log-'), 'no request id as sent in the log');
      assert.ok(!output.includes('%PDF'), 'no PDF in the log');
    } finally {
      await service.stop();
    }
  });

  it('follows LOG_LEVEL: at warn, no request lines', async () => {
    const service = await startService({ LOG_LEVEL: 'warn' });
    try {
      assert.equal((await generate(service, { data: {}, template: 'quiet' }, { headers: { 'x-request-id': 'req-quiet' } })).status, 200);
      await logsWritten();
      assert.ok(!service.output().includes('req-quiet'));
      assert.ok(!logLines(service.output()).some((l) => l.msg === 'request'));
    } finally {
      await service.stop();
    }
  });
});
