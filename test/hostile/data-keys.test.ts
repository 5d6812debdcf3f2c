/**
 * `data` as clients send it, not as templates would like it: keys that are
 * not Typst identifiers, very long keys, deep nesting. Every key is reachable
 * with `data.at("...")`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, record, send, NO_RATE_LIMIT } from '../support/hostile.js';
import { parsePdf } from '../support/pdf.js';
import { startService, type Service } from '../support/service.js';

const WORKERS = 2;
let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, WORKERS: String(WORKERS) });
});
after(async () => {
  await service.stop();
});

/** A Typst string literal of `s`. */
const literal = (s: string) => JSON.stringify(s);

describe('data keys that are not Typst identifiers', () => {
  const keys = [
    'first-name',
    '1',
    'with space',
    'größe',
    '名前',
    'emoji 🎉',
    '',
    'a.b',
    '#hash',
    '"quoted"',
    '\\back',
    'line\nbreak',
    'none',
    'let',
  ];
  for (const key of keys) {
    it(`data.at(${literal(key)}) reads the value`, async (t) => {
      const answer = await send(service, { data: { [key]: 'VALUE-OK' }, template: `#data.at(${literal(key)})` });
      record(t, answer);
      assert.equal(answer.status, 200, answer.error);
      assert.equal((await parsePdf(answer.bytes!)).text[0], 'VALUE-OK');
    });
  }

  it('every such key at once, listed with data.keys()', async () => {
    const data = Object.fromEntries(keys.map((k, i) => [k, i]));
    const answer = await send(service, { data, template: '#data.keys().len()' });
    assert.equal(answer.status, 200, answer.error);
    assert.equal((await parsePdf(answer.bytes!)).text[0], String(keys.length));
  });

  it('a 1 MB key', async (t) => {
    const key = 'k'.repeat(1024 * 1024);
    const answer = await send(service, { data: { [key]: 'LONG-KEY-OK' }, template: `#data.values().first() #data.keys().first().len()` });
    record(t, answer);
    assert.equal(answer.status, 200, answer.error);
    assert.equal((await parsePdf(answer.bytes!)).text[0], `LONG-KEY-OK ${key.length}`);
  });

  it('100,000 keys', async (t) => {
    const data = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`key-${i}`, i]));
    const answer = await send(service, { data, template: '#data.at("key-99999") of #data.len()' });
    record(t, answer);
    assert.equal(answer.status, 200, answer.error);
    assert.equal((await parsePdf(answer.bytes!)).text[0], '99999 of 100000');
  });

  it('nesting as deep as Typst reads (126 levels) is reachable', async (t) => {
    let data: Record<string, unknown> = { leaf: 'DEEP-OK' };
    for (let i = 0; i < 125; i++) data = { 'next-level': data };
    const path = '.at("next-level")'.repeat(125);
    const answer = await send(service, { data, template: `#data${path}.leaf` });
    record(t, answer);
    assert.equal(answer.status, 200, answer.error);
    assert.equal((await parsePdf(answer.bytes!)).text[0], 'DEEP-OK');
  });

  it('nesting deeper than Typst reads -> 400 naming the data', async (t) => {
    let data: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) data = { n: data };
    const answer = await send(service, { data, template: 'x' });
    record(t, answer);
    assert.equal(answer.status, 400);
    assert.match(answer.error!, /^The request's data could not be read by Typst: .*recursion limit/);
    await assertRecovered(service, WORKERS);
  });
});
