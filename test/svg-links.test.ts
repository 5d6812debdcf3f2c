/**
 * The SVG linker (src/render/svg-links.ts) on hostile SVGs: it stays linear
 * in the SVG, and what it inlines stays within the job's budget however
 * often one asset is named.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inlineLinkedAssets } from '../src/render/svg-links.js';

const svgOf = (inner: string) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg">${inner}</svg>`);

describe('SVG links', () => {
  it('inlines an asset an href names, relative to the SVG', () => {
    const assets = new Map([['img/a.png', Buffer.from('PNGDATA')]]);
    const out = inlineLinkedAssets('img/s.svg', svgOf('<image href="a.png"/>'), assets, { bytes: 1000 });
    assert.equal(out.toString(), svgOf(`<image href="data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}"/>`).toString());
  });

  it('inlines an asset whose name holds spaces and non-ASCII letters, as written in the href', () => {
    const assets = new Map([['img/Firmen Logo ü.png', Buffer.from('PNGDATA')]]);
    const out = inlineLinkedAssets('s.svg', svgOf('<image href="img/Firmen Logo ü.png"/>'), assets, { bytes: 1000 });
    assert.equal(out.toString(), svgOf(`<image href="data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}"/>`).toString());
  });

  it('scans a million unterminated hrefs in one pass', () => {
    const svg = svgOf("href='".repeat(1_000_000));
    const before = process.cpuUsage();
    const out = inlineLinkedAssets('s.svg', svg, new Map([['href', Buffer.from('x')]]), { bytes: 1000 });
    const used = process.cpuUsage(before);
    assert.equal(out, svg);
    // Each href's value is read only up to the first byte a name cannot hold: one pass, a few ms.
    assert.ok((used.user + used.system) / 1000 < 2000, `${(used.user + used.system) / 1000} ms`);
  });

  it('stops inlining at the budget when one asset is named many times', () => {
    const content = Buffer.alloc(3000, 1);
    const budget = { bytes: 100_000 };
    const out = inlineLinkedAssets('s.svg', svgOf('<image href="a.png"/>'.repeat(10_000)), new Map([['a.png', content]]), budget);
    const inlined = out.toString().split('data:image/png;base64,').length - 1;
    assert.equal(inlined, Math.floor(100_000 / (4000 + 'data:image/png;base64,'.length)));
    assert.ok(budget.bytes >= 0);
    assert.ok(out.length < 100_000 + 10_000 * 25 + 100);
  });
});
