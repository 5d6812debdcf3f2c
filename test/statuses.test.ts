/**
 * Every status the API answers with, and the message behind it, in one
 * table: each row makes the answer through the HTTP layer (app.inject, with
 * a renderer that stands in for the worker pool and answers what the row
 * needs) and checks its body is `{"error": <the message from messages.ts>}`.
 * Rows the worker words itself (a template's error, a PDF over its limit)
 * are checked against the real service in generate.test.ts and
 * output-limits.test.ts; here their wording comes through as the worker's
 * bytes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { jsonErrorBody } from '../src/bytes/error-body.js';
import { KeyStore } from '../src/http/keys.js';
import {
  ASSET_NAME_PROBLEMS,
  ASSET_REFUSAL,
  BODY_MESSAGES,
  invalidJson,
  MESSAGES,
  pdfTooLargeMessage,
  templateMessage,
  timeoutMessage,
  unsupportedEncoding,
} from '../src/messages.js';
import { CompileTimeoutError, MemoryLimitError, UnavailableError, WorkerCrashError } from '../src/render/errors.js';
import { type JobResult, WORKER_STATUS } from '../src/render/job.js';

const KEY = 'statuses-key-0123456789';
const ONE_A_MINUTE = 'statuses-one-key-0123456789';
const COMPILE_TIMEOUT_MS = 10_000;

/** What the stand-in renderer does for the next job. */
let next: () => Promise<JobResult>;
const failed = (status: number, message: string) => async (): Promise<JobResult> => {
  return {
    kind: 'failed',
    status,
    errorBody: jsonErrorBody(message),
    compileMs: 1,
    residentBytes: 0,
    engine: '0.11',
    relaid: false,
    longCleanUp: false,
  };
};
const throws = (error: Error) => async (): Promise<JobResult> => {
  throw error;
};

let app: FastifyInstance;
before(async () => {
  app = await buildApp({
    keys: KeyStore.load(`${KEY},${ONE_A_MINUTE} limit=1`, undefined),
    renderer: { render: () => next() },
    fonts: { fonts: () => [] },
    health: { stats: () => ({ size: 1, ready: 1, busy: 0, queued: 0, queueLimit: 4, spare: 0 }), closing: () => false },
    logger: pino({ level: 'silent' }),
    compileTimeoutMs: COMPILE_TIMEOUT_MS,
    rateLimit: { limit: 1000, windowMs: 60_000, maxAddresses: 1000, redisTimeoutMs: 300 },
  });
});
after(async () => {
  await app.close();
});

const BODY = '{"data": {}, "template": "x"}';
const generate = (payload: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/v1/pdf/generate',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    payload,
  });

/** Answers a generate request after telling the stand-in renderer what to do. */
const via = (behaviour: () => Promise<JobResult>) => () => {
  next = behaviour;
  return generate(BODY);
};

const TEMPLATE_FAILURE = templateMessage({ kind: 'evaluation', message: 'unknown variable: x', line: 1, column: 2 });

const ROWS: { status: number; when: string; message: string | RegExp; answer: () => Promise<LightMyRequestResponse> }[] = [
  {
    status: 400,
    when: 'invalid JSON',
    message: invalidJson('unexpected end of input', { line: 1, column: 2 }, 1),
    answer: () => generate('{'),
  },
  { status: 400, when: '`data` missing', message: BODY_MESSAGES.missingData, answer: () => generate('{"template": "x"}') },
  {
    status: 400,
    when: 'an asset name with a ".." segment',
    message: `${ASSET_REFUSAL.beforeName}../a${ASSET_REFUSAL.problem(ASSET_NAME_PROBLEMS.dotSegment)}`,
    answer: () => generate('{"data": {}, "template": "x", "assets": {"../a": "QUJD"}}'),
  },
  {
    status: 400,
    when: 'a template that fails (worded by the worker)',
    message: TEMPLATE_FAILURE,
    answer: via(failed(400, TEMPLATE_FAILURE)),
  },
  { status: 401, when: 'no key', message: MESSAGES.unauthorized, answer: () => generate(BODY, { authorization: '' }) },
  {
    status: 404,
    when: 'an unknown path',
    message: MESSAGES.notFound,
    answer: () => app.inject({ method: 'GET', url: '/v1/nothing', headers: { authorization: `Bearer ${KEY}` } }),
  },
  {
    status: 413,
    when: 'a declared length over 10 MB',
    message: MESSAGES.tooLarge,
    answer: () => generate(BODY, { 'content-length': String(10 * 1024 * 1024 + 1) }),
  },
  {
    status: 415,
    when: 'another content type',
    message: MESSAGES.unsupportedMediaType,
    answer: () => generate(BODY, { 'content-type': 'text/plain' }),
  },
  {
    status: 415,
    when: 'a content encoding',
    message: unsupportedEncoding('gzip'),
    answer: () => generate(BODY, { 'content-encoding': 'gzip' }),
  },
  {
    status: 422,
    when: 'the compile time limit',
    message: timeoutMessage(COMPILE_TIMEOUT_MS),
    answer: via(throws(new CompileTimeoutError('t'))),
  },
  {
    status: 422,
    when: 'the worker memory cap',
    message: MESSAGES.memory,
    answer: via(throws(new MemoryLimitError('m'))),
  },
  {
    status: WORKER_STATUS.pdfTooLarge,
    when: 'a PDF over MAX_PDF_BYTES (worded by the worker)',
    message: pdfTooLargeMessage(100 * 1024 * 1024),
    answer: via(failed(WORKER_STATUS.pdfTooLarge, pdfTooLargeMessage(100 * 1024 * 1024))),
  },
  {
    status: 429,
    when: 'a key past its limit',
    message: MESSAGES.rateLimited,
    answer: async () => {
      next = failed(400, TEMPLATE_FAILURE);
      await generate(BODY, { authorization: `Bearer ${ONE_A_MINUTE}` });
      return generate(BODY, { authorization: `Bearer ${ONE_A_MINUTE}` });
    },
  },
  {
    status: 500,
    when: 'a worker that died',
    message: MESSAGES.internal,
    answer: via(throws(new WorkerCrashError('c'))),
  },
  {
    status: 503,
    when: 'no capacity',
    message: MESSAGES.unavailable,
    answer: via(throws(new UnavailableError('queue_full'))),
  },
];

describe('every status the API answers with, and its message', () => {
  for (const row of ROWS) {
    it(`${row.status} for ${row.when}`, async () => {
      const res = await row.answer();
      assert.equal(res.statusCode, row.status);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const body = res.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ['error']);
      if (typeof row.message === 'string') assert.equal(body.error, row.message);
      else assert.match(String(body.error), row.message);
    });
  }
});

describe('the output limit in its 422 message', () => {
  it('is written in MB from one MB, in KB below, in bytes below one KB', () => {
    assert.equal(pdfTooLargeMessage(100 * 1024 * 1024), 'The PDF exceeds the 100 MB output limit');
    assert.equal(pdfTooLargeMessage(1.5 * 1024 * 1024), 'The PDF exceeds the 1.5 MB output limit');
    assert.equal(pdfTooLargeMessage(20_000), 'The PDF exceeds the 19.5 KB output limit');
    assert.equal(pdfTooLargeMessage(500), 'The PDF exceeds the 500 bytes output limit');
  });
});
