/**
 * render/svg-check.ts, held to a model: the depth of element trees made at
 * random (attributes with `>` and `/` in their quoted values, text, comments,
 * CDATA, processing instructions, a DOCTYPE with an internal subset, empty-
 * element tags), written out as XML that libxml2 parses; and the raster
 * images of `data:` URLs against the images written into them. The service
 * tests (test/hostile/engine-crashes.test.ts) hold the limit to Typst's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { XmlDocument } from 'libxml2-wasm';
import { looksLikeMarkup, type RasterFormat, someRasterImage, svgDepth } from '../src/render/svg-check.js';

type Node =
  | { kind: 'element'; attributes: string[]; children: Node[]; empty: boolean }
  | { kind: 'text' | 'comment' | 'cdata' | 'pi'; text: string };

const textOf = (alphabet: string[], forbidden?: string) =>
  fc
    .array(fc.constantFrom(...alphabet), { maxLength: 6 })
    .map((chars) => chars.join(''))
    .filter((text) => forbidden === undefined || !text.includes(forbidden));

const leaf = fc.oneof(
  textOf(['x', '>', '/', ']', ' ', '"', "'"]).map((text): Node => ({ kind: 'text', text })),
  // No `--` in a comment, and none may end in `-`.
  textOf(['a', '<', '>', '/', '"', "'", '[', ' ']).map((text): Node => ({ kind: 'comment', text })),
  textOf(['a', '<', '>', '/', ']', '"'], ']]>').map((text): Node => ({ kind: 'cdata', text })),
  textOf(['a', '<', '>', ' ', '"'], '?>').map((text): Node => ({ kind: 'pi', text })),
);

const attribute = fc
  .tuple(fc.constantFrom('"', "'"), textOf(['a', '>', '/', ' ', '=', '"', "'"]))
  .map(([quote, value]) => `k=${quote}${value.replaceAll(quote, '')}${quote}`);

const { tree } = fc.letrec<{ tree: Node; element: Node }>((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('element')),
  element: fc
    .tuple(fc.array(attribute, { maxLength: 2 }), fc.array(tie('tree'), { maxLength: 4 }), fc.boolean())
    .map(([attributes, children, empty]): Node => ({ kind: 'element', attributes, children: empty ? [] : children, empty })),
}));

const root = fc
  .tuple(fc.array(attribute, { maxLength: 2 }), fc.array(tree, { maxLength: 4 }))
  .map(([attributes, children]): Node => ({ kind: 'element', attributes, children, empty: false }));

function write(node: Node): string {
  switch (node.kind) {
    case 'text':
      return node.text.replaceAll('>', '&gt;');
    case 'comment':
      return `<!--${node.text}-->`;
    case 'cdata':
      return `<![CDATA[${node.text}]]>`;
    case 'pi':
      return `<?pi ${node.text}?>`;
    case 'element': {
      const head = `g${node.attributes.map((a, i) => ` ${a.replace('k=', `k${i}=`)}`).join('')}`;
      return node.empty ? `<${head}/>` : `<${head}>${node.children.map(write).join('')}</g>`;
    }
  }
}

const depthOf = (node: Node): number => (node.kind === 'element' ? 1 + Math.max(0, ...node.children.map(depthOf)) : 0);

const prolog = fc.constantFrom(
  '',
  '<?xml version="1.0"?>\n',
  '<!DOCTYPE g [ <!ENTITY e "a>b<c"> <!-- ] > <g> --> <?pi ] <g> ?> ]>\n',
  "<!DOCTYPE g SYSTEM 'x>y'>\n",
);

describe('svgDepth', () => {
  it('is the depth of the element tree, whatever quoted values, text, comments, CDATA and declarations hold', () => {
    fc.assert(
      fc.property(prolog, root, (head, tree) => {
        const xml = `${head}${write(tree)}`;
        // The model writes well-formed XML: libxml2 reads it.
        XmlDocument.fromString(xml).dispose();
        const bytes = Buffer.from(xml);
        const depth = depthOf(tree);
        assert.equal(svgDepth(bytes, Number.POSITIVE_INFINITY), depth, xml);
        // Stopped early, it says only that the limit is passed.
        for (const limit of [1, 2, 3]) assert.equal(svgDepth(bytes, limit) > limit, depth > limit, xml);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads adversarial shapes of 10 MB in one pass', () => {
    const n = 10 * 1024 * 1024;
    for (const shape of ['<', '<a ', '<a "', '<!', '<!--', '<![CDATA[', '<?', '</', '<a/>', '<a>']) {
      const bytes = Buffer.alloc(n, shape);
      const started = process.hrtime.bigint();
      svgDepth(bytes, Number.POSITIVE_INFINITY);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // Linear: tens of milliseconds; quadratic would be hours.
      assert.ok(ms < 5000, `${JSON.stringify(shape)}: ${ms} ms`);
    }
  });
});

describe('looksLikeMarkup', () => {
  it('is true for bytes that start with <, after a byte order mark and white space', () => {
    assert.equal(looksLikeMarkup(Buffer.from('\ufeff \r\n\t<svg/>')), true);
    assert.equal(looksLikeMarkup(Buffer.from('<')), true);
    assert.equal(looksLikeMarkup(Buffer.from('x<svg/>')), false);
    assert.equal(looksLikeMarkup(Buffer.from('\x89PNG')), false);
    assert.equal(looksLikeMarkup(Buffer.alloc(0)), false);
  });
});

describe('someRasterImage', () => {
  const SIGNATURES: Record<RasterFormat, Buffer> = {
    png: Buffer.from('89504e470d0a1a0a', 'hex'),
    jpg: Buffer.from('ffd8ffe0', 'hex'),
    gif: Buffer.from('GIF89a'),
  };
  const image = fc
    .tuple(fc.constantFrom<RasterFormat | 'other'>('png', 'jpg', 'gif', 'other'), fc.uint8Array({ maxLength: 40 }))
    .map(([format, tail]) => ({ format, bytes: Buffer.concat([format === 'other' ? Buffer.from('text') : SIGNATURES[format], tail]) }));

  it('finds each raster image of a base64 data: URL in an href, decoded, and nothing else', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            image,
            fc.constantFrom('href', 'xlink:href'),
            fc.constantFrom('"', "'"),
            fc.constantFrom('image/png', 'image/x', ''),
            fc.boolean(),
          ),
          { maxLength: 5 },
        ),
        (images) => {
          const svg = Buffer.from(
            `<svg>${images
              .map(([{ bytes }, attribute, quote, type, base64]) =>
                base64
                  ? `<image ${attribute}=${quote}data:${type};base64,${bytes.toString('base64')}${quote}/>`
                  : `<image ${attribute}=${quote}data:${type},plain${quote}/>`,
              )
              .join('')}</svg>`,
          );
          const found: { format: RasterFormat; bytes: Buffer }[] = [];
          someRasterImage(svg, (bytes, format) => {
            found.push({ format, bytes: Buffer.from(bytes) });
            return false;
          });
          const expected = images
            .filter(([{ format }, , , , base64]) => base64 && format !== 'other')
            .map(([{ format, bytes }]) => ({ format, bytes }));
          assert.deepEqual(found, expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('stops at the first image it is told to, and wipes each once seen', () => {
    const png = SIGNATURES.png.toString('base64');
    const svg = Buffer.from(`<svg><image href="data:image/png;base64,${png}"/><image href="data:image/png;base64,${png}"/></svg>`);
    const seen: Buffer[] = [];
    assert.equal(
      someRasterImage(svg, (bytes) => {
        seen.push(bytes);
        return true;
      }),
      true,
    );
    assert.equal(seen.length, 1);
    assert.ok(
      seen[0]!.every((b) => b === 0),
      'wiped',
    );
  });
});
