/**
 * render/svg-check.ts, held to a model: the depth of element trees made at
 * random (attributes with `>` and `/` in their quoted values, text, comments,
 * CDATA, processing instructions, a DOCTYPE with an internal subset, empty-
 * element tags), written out as XML that libxml2 parses; and the PNG and
 * GIF images of `data:` URLs against the images written into them, in the
 * ways SVGs write an href. The service
 * tests (test/hostile/engine-crashes.test.ts) hold the limit to Typst's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { XmlDocument } from 'libxml2-wasm';
import { type RasterFormat, rasterImages, svgDepth } from '../src/render/svg-check.js';

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

  it('reads adversarial shapes of 10 MB in one pass, as rasterImages does', () => {
    const n = 10 * 1024 * 1024;
    const shapes = ['<', '<a ', '<a "', '<!', '<!--', '<![CDATA[', '<?', '</', '<a/>', '<a>', '<a href="', '&', '&#', '%', 'data:;base64,'];
    for (const [shape, prefix] of shapes.flatMap((shape) => [[shape, ''] as const, [shape, '<a href="data:'] as const])) {
      const bytes = Buffer.alloc(n, shape);
      Buffer.from(prefix).copy(bytes);
      const started = process.hrtime.bigint();
      svgDepth(bytes, Number.POSITIVE_INFINITY);
      for (const { bytes: image } of rasterImages(bytes)) image.fill(0);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // Linear: tens of milliseconds; quadratic would be hours.
      assert.ok(ms < 5000, `${JSON.stringify(prefix + shape)}: ${ms} ms`);
    }
  });
});

describe('rasterImages', () => {
  const SIGNATURES: Record<RasterFormat | 'jpeg' | 'text', Buffer> = {
    png: Buffer.from('89504e470d0a1a0a', 'hex'),
    gif: Buffer.from('GIF89a'),
    // 0.11 embeds a JPEG as it is (never decodes it), so it is not one of these.
    jpeg: Buffer.from('ffd8ffe0', 'hex'),
    text: Buffer.from('text'),
  };
  const image = fc
    .tuple(fc.constantFrom<keyof typeof SIGNATURES>('png', 'gif', 'jpeg', 'text'), fc.uint8Array({ maxLength: 40 }))
    .map(([kind, tail]) => ({ kind, bytes: Buffer.concat([SIGNATURES[kind], tail]) }));
  /** An href as SVGs write it: the attribute's spacing, quotes and case, base64 or percent-encoding, character references. */
  const href = fc.record({
    attribute: fc.constantFrom('href', 'xlink:href'),
    equals: fc.constantFrom('=', ' = ', '\n=\t'),
    quote: fc.constantFrom('"', "'"),
    pad: fc.constantFrom('', ' ', '\n '),
    scheme: fc.constantFrom('data:', 'DATA:', 'Data:', '&#100;ata:', '&#x64;ata:'),
    type: fc.constantFrom('image/png', '', 'image/x'),
    base64: fc.constantFrom(';base64', '; base64', ';BASE64', ''),
  });
  const write = (bytes: Buffer, h: typeof href extends fc.Arbitrary<infer H> ? H : never) => {
    const body = h.base64
      ? bytes.toString('base64').replace(/(.{8})/g, '$1\n')
      : [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
    return `${h.attribute}${h.equals}${h.quote}${h.pad}${h.scheme}${h.type}${h.base64},${body}${h.pad}${h.quote}`;
  };

  it('finds each PNG and GIF of a data: URL in an href of a start tag, decoded, as XML and URL parsers read it', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(image, href, fc.boolean()), { maxLength: 5 }), (items) => {
        const svg = Buffer.from(
          `<svg>${items
            .map(([{ bytes }, h, decoy]) => {
              const tag = `<image width="1" ${write(bytes, h)}/>`;
              // The same href in a comment or CDATA is no image; a stray quote in a comment hides none after it.
              return decoy ? `<!-- ' " ${tag} --><![CDATA[ ${tag} ]]>${tag}` : tag;
            })
            .join('')}</svg>`,
        );
        const found = rasterImages(svg);
        const expected = items
          .filter(([{ kind }]) => kind === 'png' || kind === 'gif')
          .map(([{ kind, bytes }]) => ({ format: kind, bytes }));
        assert.deepEqual(
          found.map(({ format, bytes }) => ({ format, bytes: Buffer.from(bytes) })),
          expected,
          svg.toString(),
        );
        for (const { bytes } of found) bytes.fill(0);
      }),
      { numRuns: 1000 },
    );
  });
});
