/**
 * The SVG linker (src/render/svg-links.ts) on hostile SVGs: it stays linear
 * in the SVG, what it inlines stays within the job's budget however often
 * one asset is named, and it resolves hrefs exactly as a plain string
 * implementation would (the oracle below), though it works on bytes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AssetsByName, type InlineBudget, inlineLinkedAssets, type LinkableAsset } from '../src/render/svg-links.js';
import { runs } from './support/fuzz-scale.js';

const svgOf = (inner: string) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg">${inner}</svg>`);

/** Links the SVG `svgName` among `others`, as a job's assets (the SVG is one of them). */
function link(svgName: string, svg: Buffer, others: Record<string, Buffer>, budget: InlineBudget): Buffer {
  const svgAsset: LinkableAsset = { name: Buffer.from(svgName), content: svg };
  const assets = [svgAsset, ...Object.entries(others).map(([name, content]) => ({ name: Buffer.from(name), content }))];
  return inlineLinkedAssets(svgAsset, new AssetsByName(assets), budget);
}

/**
 * The oracle: the same rules on strings. An href is a name's run of bytes
 * (no quote, `=`, `<`, `>`, backslash or control byte, at most 300) closed
 * by its own quote; resolved against the SVG's folder (`/` from the root),
 * `.` and empty segments skipped, `..` dropping a folder; an asset of that
 * name with a known image extension, not the SVG itself, becomes a data: URL
 * while the budget lasts.
 */
function oracle(svgName: string, svg: string, others: Record<string, Buffer>, budget: InlineBudget): string {
  const types: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    svg: 'image/svg+xml',
    webp: 'image/webp',
  };
  const resolve = (href: string) => {
    const base = href.startsWith('/') ? [] : svgName.split('/').slice(0, -1);
    for (const segment of href.split('/')) {
      if (segment === '' || segment === '.') continue;
      if (segment === '..') base.pop();
      else base.push(segment);
    }
    return base.join('/');
  };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: an href holds no control byte, as in the linker
  return svg.replace(/href=(["'])([^"'=<>\\\x00-\x1f\x7f]{0,300})\1/g, (whole, quote: string, href: string) => {
    const name = resolve(href);
    const content = name === svgName ? undefined : others[name];
    const type = types[/\.([a-z]+)$/i.exec(name)?.[1]?.toLowerCase() ?? ''];
    if (!content || !type) return whole;
    const url = `data:${type};base64,${content.toString('base64')}`;
    if (url.length > budget.bytes) return whole;
    budget.bytes -= url.length;
    return `href=${quote}${url}${quote}`;
  });
}

describe('SVG links', () => {
  it('inlines an asset an href names, relative to the SVG', () => {
    const out = link('img/s.svg', svgOf('<image href="a.png"/>'), { 'img/a.png': Buffer.from('PNGDATA') }, { bytes: 1000 });
    assert.equal(out.toString(), svgOf(`<image href="data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}"/>`).toString());
  });

  it('inlines an asset whose name holds spaces and non-ASCII letters, as written in the href', () => {
    const out = link(
      's.svg',
      svgOf('<image href="img/Firmen Logo ü.png"/>'),
      { 'img/Firmen Logo ü.png': Buffer.from('PNGDATA') },
      { bytes: 1000 },
    );
    assert.equal(out.toString(), svgOf(`<image href="data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}"/>`).toString());
  });

  it('scans a million unterminated hrefs in one pass', () => {
    const svg = svgOf("href='".repeat(1_000_000));
    const before = process.cpuUsage();
    const out = link('s.svg', svg, { href: Buffer.from('x') }, { bytes: 1000 });
    const used = process.cpuUsage(before);
    assert.equal(out, svg);
    // Each href's value is read only up to the first byte a name cannot hold: one pass, a few ms.
    assert.ok((used.user + used.system) / 1000 < 2000, `${(used.user + used.system) / 1000} ms`);
  });

  it('resolves 100,000 hrefs of 300 bytes, none of them a name, in one pass', () => {
    const svg = svgOf(`<use href="${'../a/'.repeat(60)}"/>`.repeat(100_000));
    const before = process.cpuUsage();
    const out = link('img/s.svg', svg, { 'a/b.png': Buffer.from('x') }, { bytes: 1000 });
    const used = process.cpuUsage(before);
    assert.equal(out, svg);
    assert.ok((used.user + used.system) / 1000 < 2000, `${(used.user + used.system) / 1000} ms`);
  });

  it('stops inlining at the budget when one asset is named many times', () => {
    const content = Buffer.alloc(3000, 1);
    const budget = { bytes: 100_000 };
    const out = link('s.svg', svgOf('<image href="a.png"/>'.repeat(10_000)), { 'a.png': content }, budget);
    const inlined = out.toString().split('data:image/png;base64,').length - 1;
    assert.equal(inlined, Math.floor(100_000 / (4000 + 'data:image/png;base64,'.length)));
    assert.ok(budget.bytes >= 0);
    assert.ok(out.length < 100_000 + 10_000 * 25 + 100);
  });

  it(`resolves and inlines as the string oracle does, on hostile hrefs (${runs(2000)} cases)`, () => {
    const names = [
      'a.png',
      'img/b.PNG',
      'img/sub/c.svg',
      'img/d e ü.gif',
      'x.txt',
      'img/s.svg',
      'E.JpEg',
      'img/sub/f.webp',
      'g.png.txt',
      'h.',
    ];
    const svgNames = ['s.svg', 'img/s.svg', 'img/sub/s.svg', 'S.SVG'];
    const segments = ['', '.', '..', 'img', 'sub', 'a.png', 'b.PNG', 'c.svg', 'd e ü.gif', 's.svg', 'E.JpEg', 'f.webp', 'x.txt', 'h.', 'ü'];
    const href = fc
      .tuple(fc.boolean(), fc.array(fc.constantFrom(...segments), { maxLength: 8 }), fc.constantFrom('"', "'"), fc.boolean())
      .map(([root, parts, quote, closed]) => `href=${quote}${root ? '/' : ''}${parts.join('/')}${closed ? quote : ''}`);
    const filler = fc.constantFrom('<use ', ' ', '/>', '=', 'href=', 'xlink:', '"', "'", '<', '>', 'x', '\\', '\n', 'é');
    fc.assert(
      fc.property(
        fc.constantFrom(...svgNames),
        fc.array(fc.oneof(href, filler), { maxLength: 30 }),
        fc.subarray(names),
        fc.oneof(fc.constant(1_000_000), fc.nat(200)),
        (svgName, pieces, present, bytes) => {
          const others = Object.fromEntries(present.filter((n) => n !== svgName).map((n, i) => [n, Buffer.from(`content ${i} of ${n}`)]));
          const svg = pieces.join('');
          const budget = { bytes };
          const expectedBudget = { bytes };
          const out = link(svgName, Buffer.from(svg), others, budget);
          assert.equal(out.toString(), oracle(svgName, svg, others, expectedBudget));
          assert.equal(budget.bytes, expectedBudget.bytes);
        },
      ),
      { numRuns: runs(2000) },
    );
  });
});
