/**
 * What a newcomer meets in the first hour, against a real server: any other
 * method than POST on the generate route is a 405 naming the one it takes;
 * a 400 of the body check keeps the keep-alive connection as a template's
 * 400 does; a compile stopped at its time limit names its engine; the start
 * banner gives an address a browser reaches and where the playground is;
 * `--help` promises nothing it does not print.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request as httpRequest, Agent, METHODS } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { generate, MAIN, startService, TEST_KEY, type Service } from './support/service.js';

let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1', COMPILE_TIMEOUT_MS: '1000' });
});
after(async () => {
  await service?.stop();
});

/** One request with `method` and no body on its own connection: its status, its Allow header and its body. */
function methodAnswer(method: string, headers: Record<string, string>): Promise<{ status: number; allow?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${service.url}/v1/pdf/generate`, { method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, allow: res.headers.allow, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('methods on /v1/pdf/generate', () => {
  // Every method Node's parser takes but POST, WebDAV's and TRACE among them; CONNECT is answered 501 before any route.
  const others = METHODS.filter((method) => method !== 'POST' && method !== 'CONNECT');
  it(`${others.length} other methods: 405 with Allow: POST and the JSON error body (HEAD: no body), with or without a key`, async () => {
    assert.ok(others.includes('TRACE') && others.includes('PROPFIND') && others.includes('GET'));
    for (const method of others) {
      for (const headers of [{}, { authorization: `Bearer ${TEST_KEY}` }] as Record<string, string>[]) {
        const answer = await methodAnswer(method, headers);
        assert.equal(answer.status, 405, method);
        assert.equal(answer.allow, 'POST', method);
        const expected = method === 'HEAD' ? '' : JSON.stringify({ error: 'Method not allowed: POST /v1/pdf/generate takes a POST' });
        assert.equal(answer.body, expected, method);
      }
    }
  });
});

/** Two requests on one keep-alive connection: the status of each and the local port each used. */
async function twoOnOneConnection(first: string): Promise<{ statuses: number[]; ports: number[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const statuses: number[] = [];
  const ports: number[] = [];
  try {
    for (const body of [first, JSON.stringify({ data: {}, template: 'second' })]) {
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(
          `${service.url}/v1/pdf/generate`,
          {
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            statuses.push(res.statusCode!);
            ports.push(req.socket!.localPort!);
            res.resume();
            res.on('end', resolve);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    }
  } finally {
    agent.destroy();
  }
  return { statuses, ports };
}

describe('keep-alive after a 400', () => {
  it('a template Typst refuses keeps the connection', async () => {
    const { statuses, ports } = await twoOnOneConnection(JSON.stringify({ data: {}, template: '#foo' }));
    assert.deepEqual(statuses, [400, 200]);
    assert.equal(ports[0], ports[1], 'one connection');
  });

  for (const [what, body] of [
    ['a body that is not JSON', '{"data": {}, '],
    ['a body without "data"', '{"template": "x"}'],
    ['an asset with a bad name', '{"data": {}, "template": "", "assets": {"../x": "AAAA"}}'],
  ] as const) {
    it(`${what} keeps it too`, async () => {
      const { statuses, ports } = await twoOnOneConnection(body);
      assert.deepEqual(statuses, [400, 200]);
      assert.equal(ports[0], ports[1], 'one connection');
    });
  }
});

describe('X-Typst-Version', () => {
  it('is on the 422 of a compile stopped at its time limit', async () => {
    for (const [typst, version] of [
      [undefined, '0.11.1'],
      ['0.14', '0.14.2'],
    ] as const) {
      const res = await generate(service, {
        data: {},
        template: '#for i in range(100000) { for j in range(100000) { let x = i * j } }',
        typst,
      });
      assert.equal(res.status, 422);
      assert.equal(res.headers.get('x-typst-version'), version);
      await res.arrayBuffer();
    }
  });
});

describe('a template that needs Typst 0.14', () => {
  const HINT = '; hint: this template compiles with Typst 0.14: send "typst": "0.14"';
  it('fails on the 0.11 default with a hint that 0.14 compiles it', async () => {
    const res = await generate(service, { data: {}, template: 'Price: #decimal("1.10")' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-typst-version'), '0.11.1');
    assert.deepEqual(await res.json(), { error: `Typst error on line 1, column 9: unknown variable: decimal${HINT}` });
    const form = new FormData();
    form.append('template', 'Price: #decimal("1.10")');
    form.append('data', '{}');
    const formRes = await fetch(`${service.url}/v1/pdf/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}` },
      body: form,
    });
    assert.match(((await formRes.json()) as { error: string }).error, /send "typst": "0\.14"$/);
  });

  it('and with it, compiles', async () => {
    const res = await generate(service, { data: {}, template: 'Price: #decimal("1.10")', typst: '0.14' });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });

  for (const [what, template] of [
    ['an unknown variable on both engines', '#nosuchthing'],
    ['a syntax error', '#('],
    ['a panic', '#panic("no")'],
  ] as const) {
    it(`gives no hint for ${what}`, async () => {
      const res = await generate(service, { data: {}, template });
      assert.equal(res.status, 400);
      assert.doesNotMatch(((await res.json()) as { error: string }).error, /hint: this template compiles/);
    });
  }
});

describe('the start banner', () => {
  it('names an address a browser reaches, and where the playground is', async () => {
    const everywhere = await startService({ HOST: '0.0.0.0', WORKERS: '1', PLAYGROUND: 'true' });
    try {
      // The playground's line follows the one startService waits for.
      for (let i = 0; i < 100 && !everywhere.output().includes('playground at'); i++) await new Promise((r) => setTimeout(r, 20));
      const output = everywhere.output();
      assert.doesNotMatch(output, /0\.0\.0\.0/);
      const url = /listening on (http:\/\/localhost:\d+) /.exec(output)?.[1];
      assert.ok(url, output);
      assert.match(output, new RegExp(`playground at ${url}/playground\\n`));
      assert.equal((await fetch(`${url}/playground`)).status, 200);
    } finally {
      await everywhere.stop();
    }
  });
});

describe('--help', () => {
  it('refers to nothing it does not print', () => {
    const help = execFileSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8' });
    assert.doesNotMatch(help, /see below|see above/i);
    assert.match(help, /API_KEYS_FILE .*sha256:<hex>/);
  });
});
