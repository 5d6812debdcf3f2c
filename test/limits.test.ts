/**
 * The 10 MB body limit: refused from Content-Length before reading, refused
 * while reading a chunked body, and a body just under the limit still works.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { generate, startService, TEST_KEY, type Service } from './support/service.js';

const LIMIT = 10 * 1024 * 1024;
let service: Service;
before(async () => {
  service = await startService();
});
after(async () => {
  await service.stop();
});

interface RawAnswer {
  status: number;
  body: string;
  /** Bytes of the body the client had written when the answer came. */
  sent: number;
}

/** Streams `total` bytes of a JSON body (chunked unless a length is declared) and returns the answer. */
function streamBody(total: number, declaredLength?: number): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const url = new URL('/v1/pdf/generate', service.url);
    const headers: Record<string, string | number> = { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` };
    if (declaredLength !== undefined) headers['content-length'] = declaredLength;
    const req = request(url, { method: 'POST', headers });
    let sent = 0;
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body, sent }));
    });
    req.on('error', (error) => reject(error));
    const head = '{"data":{"s":"';
    const chunk = Buffer.alloc(64 * 1024, 'a');
    req.write(head);
    sent = head.length;
    const pump = () => {
      while (sent < total) {
        if (req.destroyed) return;
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end('"},"template":"x"}');
    };
    pump();
  });
}

describe('payload limit', () => {
  it('refuses a declared Content-Length over 10 MB before reading the body', async () => {
    const answer = await new Promise<RawAnswer>((resolve, reject) => {
      const req = request(new URL('/v1/pdf/generate', service.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': LIMIT + 1 },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body, sent: 0 }));
      });
      req.on('error', reject);
      req.flushHeaders(); // headers only: the answer must come without a byte of body
    });
    assert.equal(answer.status, 413);
    assert.deepEqual(JSON.parse(answer.body), { error: 'Payload exceeds 10MB limit' });
  });

  it('refuses a chunked body once it grows past 10 MB', async () => {
    const answer = await streamBody(LIMIT + 2 * 1024 * 1024).catch((error: Error) => ({ status: 0, body: error.message, sent: 0 }));
    assert.equal(answer.status, 413, answer.body);
    assert.deepEqual(JSON.parse(answer.body), { error: 'Payload exceeds 10MB limit' });
  });

  it('accepts a body just under 10 MB', async () => {
    const filler = 'x'.repeat(LIMIT - 200);
    const body = JSON.stringify({ data: { big: filler, name: 'small' }, template: 'Hello #data.name, #data.big.len()' });
    assert.ok(Buffer.byteLength(body) < LIMIT);
    assert.ok(Buffer.byteLength(body) > LIMIT - 300);
    const res = await generate(service, body);
    assert.equal(res.status, 200, await res.clone().text());
  });

  it('refuses a body one byte over 10 MB', async () => {
    // Sent with node:http, which still reads the answer when the server stops reading the upload.
    const body = Buffer.from(JSON.stringify({ data: { big: 'x'.repeat(LIMIT) }, template: 'x' }));
    const answer = await new Promise<RawAnswer>((resolve, reject) => {
      const req = request(new URL('/v1/pdf/generate', service.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': body.length },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, sent: body.length }));
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
        // The answer may still be on its way; never wait forever for it.
        setTimeout(() => resolve({ status: 0, body: `{"error":"${error.code}"}`, sent: body.length }), 3000).unref();
      });
      req.end(body);
    });
    assert.equal(answer.status, 413);
    assert.deepEqual(JSON.parse(answer.body), { error: 'Payload exceeds 10MB limit' });
  });

  it('keeps serving after refusing large bodies', async () => {
    const res = await generate(service, { data: {}, template: 'still here' });
    assert.equal(res.status, 200);
  });
});
