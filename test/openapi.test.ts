/**
 * GET /v1/openapi.json, and real answers of every status checked against it
 * (test/support/openapi.ts): 200, 400, 401, 413, 415, 422, 429, 500, 503.
 */
import assert from 'node:assert/strict';
import { formBody } from './support/form.js';
import { after, before, describe, it } from 'node:test';
import { generateBodySchema } from '../src/http/openapi-request.js';
import { exchange, OpenApiChecker, type Answer } from './support/openapi.js';
import { startService, TEST_KEY, type Service } from './support/service.js';

const RUNAWAY = '#for i in range(100000) { for j in range(100000) { } }';
function post(service: Service, body: unknown, headers: Record<string, string | number> = {}): Promise<Answer> {
  return exchange(`${service.url}/v1/pdf/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function loadChecker(service: Service): Promise<OpenApiChecker> {
  const res = await fetch(`${service.url}/v1/openapi.json`);
  assert.equal(res.status, 200);
  return new OpenApiChecker((await res.json()) as Record<string, unknown>);
}

describe('OpenAPI document', () => {
  let service: Service;
  let checker: OpenApiChecker;

  before(async () => {
    service = await startService({ WORKERS: '1', QUEUE_LIMIT: '0', COMPILE_TIMEOUT_MS: '1500', RATE_LIMIT_PER_MINUTE: '1000' });
    checker = await loadChecker(service);
  });
  after(async () => {
    await service.stop();
  });

  const check = (method: string, path: string, answer: Answer, status: number) => {
    assert.equal(answer.status, status, answer.body.toString().slice(0, 200));
    assert.deepEqual(checker.problems(method, path, answer), [], `${method} ${path} ${status}`);
  };

  it('is OpenAPI 3.1 with valid JSON Schemas, the route body schema and a bearer scheme, served without a key', () => {
    const doc = checker.document;
    assert.equal(doc.openapi, '3.1.0');
    assert.match(doc.info.description, /\(default 0\.11\.1\)/, 'the default engine, unless the operator sets one');
    assert.ok(checker.compileAll() > 20, 'schemas compile');
    const generate = checker.operation('POST', '/v1/pdf/generate');
    assert.deepEqual(generate.requestBody.content['application/json'].schema, generateBodySchema);
    assert.deepEqual(generate.security, [{ bearerAuth: [] }]);
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      description: doc.components.securitySchemes.bearerAuth.description,
    });
    for (const status of ['200', '400', '401', '404', '408', '413', '415', '422', '429', '431', '500', '503']) {
      assert.ok(generate.responses[status], `generate describes ${status}`);
    }
    assert.equal(generate.responses['200'].content['application/pdf'].schema.format, 'binary');
    assert.ok(generate.responses['200'].headers['X-Typst-Version'].required, '200 names the Typst version');
    assert.deepEqual(generateBodySchema.properties.typst.enum, ['0.11', '0.14', '0.11.1', '0.14.2', null]);
    assert.ok(generate.requestBody.content['multipart/form-data'].schema, 'a multipart form is described');
    for (const header of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After']) {
      assert.ok(generate.responses['429'].headers[header]?.required, `429 carries ${header}`);
    }
    assert.ok(checker.operation('GET', '/v1/fonts').responses['200']);
  });

  it('describes real 200, 400, 401, 415 and 413 answers of generate', async () => {
    const ok = await post(service, { data: { name: 'x' }, template: '= Hi #data.name' });
    check('POST', '/v1/pdf/generate', ok, 200);
    check('POST', '/v1/pdf/generate', await post(service, { data: {}, template: '#(' }), 400);
    check('POST', '/v1/pdf/generate', await post(service, { data: {}, template: 'x', typst: '0.14', pdf: { standard: 'a-3b' } }), 200);
    check('POST', '/v1/pdf/generate', await post(service, { data: {}, template: 'x', typst: '0.12' }), 400);
    check('POST', '/v1/pdf/generate', await post(service, { data: {}, template: '#(', typst: '0.14' }), 400);
    check('POST', '/v1/pdf/generate', await post(service, { template: 'x' }), 400);
    check('POST', '/v1/pdf/generate', await post(service, '{not json'), 400);
    check('POST', '/v1/pdf/generate', await post(service, { data: {}, template: 'x' }, { authorization: 'Bearer wrong' }), 401);
    check('POST', '/v1/pdf/generate', await post(service, 'x', { 'content-type': 'text/plain' }), 415);
    const tooLarge = await exchange(`${service.url}/v1/pdf/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'content-length': 11 * 1024 * 1024 },
      headersOnly: true,
    });
    check('POST', '/v1/pdf/generate', tooLarge, 413);
    check('GET', '/v1/pdf/generate', await exchange(`${service.url}/v1/pdf/generate`, {}), 405);
    const form = formBody(
      [
        { name: 'template', filename: 'main.typ', value: '= Hi #data.name' },
        { name: 'data', value: '{"name": "form"}' },
      ],
      'b',
    );
    const formAnswer = await exchange(`${service.url}/v1/pdf/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'multipart/form-data; boundary=b' },
      body: form,
    });
    check('POST', '/v1/pdf/generate', formAnswer, 200);
  });

  it('describes real 422, 503 and 500 answers of generate', async () => {
    const runaway = post(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 300));
    // One worker, no queue: refused at once.
    check('POST', '/v1/pdf/generate', await post(service, { data: {}, template: 'refused' }), 503);
    check('POST', '/v1/pdf/generate', await runaway, 422);
    await waitForReady(service);

    const crashing = post(service, { data: {}, template: RUNAWAY });
    await new Promise((r) => setTimeout(r, 300));
    for (const pid of service.workerPids()) process.kill(pid, 'SIGKILL');
    check('POST', '/v1/pdf/generate', await crashing, 500);
    await waitForReady(service);
  });

  it('describes real answers of fonts, health, readiness and the document itself', async () => {
    const fonts = await exchange(`${service.url}/v1/fonts`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
    check('GET', '/v1/fonts', fonts, 200);
    check('GET', '/v1/fonts', await exchange(`${service.url}/v1/fonts`, {}), 401);
    check('GET', '/healthz', await exchange(`${service.url}/healthz`, {}), 200);
    check('GET', '/readyz', await exchange(`${service.url}/readyz`, {}), 200);
    check('GET', '/v1/openapi.json', await exchange(`${service.url}/v1/openapi.json`, {}), 200);
    check('GET', '/metrics', await exchange(`${service.url}/metrics`, {}), 200);
  });
});

describe('OpenAPI: 429', () => {
  let service: Service;
  before(async () => {
    service = await startService({ WORKERS: '1', RATE_LIMIT_PER_MINUTE: '2' });
  });
  after(async () => {
    await service.stop();
  });

  it('describes the rate limit answer, where a limit of 2 per minute produces one', async () => {
    const checker = await loadChecker(service);
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await post(service, { data: {}, template: `n${i}` }));
    assert.equal(answers[0]!.status, 200);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 429, 429],
    );
    const limited = answers[2]!;
    assert.deepEqual(checker.problems('POST', '/v1/pdf/generate', limited), []);
    assert.deepEqual(JSON.parse(limited.body.toString()), { error: 'Rate limit exceeded' });
  });
});

async function waitForReady(service: Service): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const res = await fetch(`${service.url}/readyz`);
    await res.arrayBuffer();
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('service not ready again');
}
