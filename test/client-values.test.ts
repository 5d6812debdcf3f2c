/**
 * The client package is published with no dependency on the service, so it
 * writes the request's vocabulary out again: this holds its copies to the
 * service's own (a new engine or standard must reach `typst-pdf` and the
 * playground's menus, which build on the client's lists).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as client from 'typst-pdf-client';
import { EINVOICE_PROFILES, MAX_BODY_BYTES, PDF_STANDARDS } from '../src/api-values.js';
import { ENGINE_IDS, ENGINE_VERSIONS } from '../src/engines.js';

describe("the client's copy of the request vocabulary", () => {
  it('names the engines, PDF standards, e-invoice profiles and body limit the service takes', () => {
    assert.deepEqual(client.TYPST_ENGINES, [...ENGINE_IDS, ...ENGINE_IDS.map((id) => ENGINE_VERSIONS[id])]);
    assert.deepEqual(client.PDF_STANDARDS, PDF_STANDARDS);
    assert.deepEqual(client.EINVOICE_PROFILES, EINVOICE_PROFILES);
    assert.equal(client.MAX_BODY_BYTES, MAX_BODY_BYTES);
  });
});
