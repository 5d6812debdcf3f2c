/**
 * PLAYGROUND=false: the page, its files and the redirect are not served
 * (404, with the API's error body); the API itself is unchanged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startService, TEST_KEY, type Service } from './support/service.js';

describe('PLAYGROUND=false', () => {
  let service: Service;
  before(async () => {
    service = await startService({ PLAYGROUND: 'false', WORKERS: '1' });
  });
  after(async () => {
    await service?.stop();
  });

  it('answers 404 for /playground, its files and /', async () => {
    for (const path of ['/playground', '/playground/', '/playground/index.html', '/playground/examples/report.typ', '/']) {
      const res = await fetch(`${service.url}${path}`, { redirect: 'manual' });
      assert.equal(res.status, 404, path);
      assert.deepEqual(await res.json(), { error: 'Not found' }, path);
      assert.equal(res.headers.get('content-security-policy'), null, path);
    }
  });

  it('still serves the API', async () => {
    const res = await fetch(`${service.url}/v1/fonts`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(res.status, 200);
  });
});

describe('PLAYGROUND with a value that is not true or false', () => {
  it('stops the start with a message naming the variable', async () => {
    await assert.rejects(startService({ PLAYGROUND: 'maybe', WORKERS: '1' }), /PLAYGROUND must be true or false, got "maybe"/);
  });
});
