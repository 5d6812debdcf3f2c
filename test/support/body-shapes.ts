/**
 * Request bodies of adversarial shapes, each made to a given size: what a
 * body check that is not linear in the body would choke on (millions of
 * tiny keys or asset entries, long escape runs, deep nesting, image headers
 * that make the reader walk the whole asset). Used by the body-check tests
 * (the work for N bytes against 4N) and by the bench (server CPU and
 * /healthz latency while a 10 MiB body of each shape is checked).
 */

export interface BodyShape {
  name: string;
  /** What the service answers for it (when no template runs into trouble). */
  status: number;
  /** A body of about `bytes` bytes (never more). */
  make(bytes: number): Buffer;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/** `{"data":..., "template":..., "assets":{...}}` with `inner` repeated to fill `bytes`. */
function fill(bytes: number, head: string, unit: string, tail: string): Buffer {
  const count = Math.max(1, Math.floor((bytes - head.length - tail.length) / unit.length));
  return Buffer.from(head + unit.repeat(count) + tail);
}

/** A JPEG that is only APP segments of 2 bytes (FF E0 00 02) up to `bytes`, then a small SOF. */
function segmentsJpeg(bytes: number): Buffer {
  const count = Math.max(1, Math.floor((bytes - 20) / 4));
  const out = Buffer.alloc(2 + count * 4 + 11 + 2);
  out[0] = 0xff;
  out[1] = 0xd8;
  for (let i = 0; i < count; i++) out.set([0xff, 0xe0, 0x00, 0x02], 2 + i * 4);
  out.set([0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x10, 0x00, 0x10, 0x01, 0x01], 2 + count * 4);
  out.set([0xff, 0xd9], out.length - 2);
  return out;
}

/** A GIF whose first frame comes after one comment extension of `bytes` in 1-byte sub-blocks. */
function subBlocksGif(bytes: number): Buffer {
  const count = Math.max(1, Math.floor((bytes - 40) / 2));
  const head = Buffer.from([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 16, 0, 16, 0, 0, 0, 0, 0x21, 0xfe]);
  const blocks = Buffer.alloc(count * 2, 0x01);
  for (let i = 1; i < blocks.length; i += 2) blocks[i] = 0x41;
  const frame = Buffer.from([0x00, 0x2c, 0, 0, 0, 0, 16, 0, 16, 0, 0, 0x02, 0x02, 0x4c, 0x01, 0x00, 0x3b]);
  return Buffer.concat([head, blocks, frame]);
}

const HEAD = '{"data":{},"template":"x","assets":{';

export const BODY_SHAPES: BodyShape[] = [
  { name: 'one name repeated in assets ("a":"")', status: 200, make: (n) => fill(n, HEAD, '"a":"",', '"a":""}}') },
  {
    name: 'a 255-byte name repeated in assets',
    status: 200,
    make: (n) => fill(n, HEAD, `"${'n'.repeat(255)}":"",`, '"a":""}}'),
  },
  {
    name: 'escaped names repeated in assets ("\\u0061":"")',
    status: 200,
    make: (n) => fill(n, HEAD, '"\\u0061":"",', '"a":""}}'),
  },
  {
    name: '1,000 names, then more than 1,000 (refused)',
    status: 400,
    make: (n) => fill(n, `${HEAD}${Array.from({ length: 1000 }, (_, i) => `"f${i}":"",`).join('')}`, '"z":"",', '"a":""}}'),
  },
  // Each repetition of a key of `pdf` and of its objects was once kept, copied and checked (src/bytes/json-check.ts, lastMembers).
  {
    name: 'one pdf key repeated ("tagged":true)',
    status: 200,
    // `tagged` is an option of Typst 0.14: with 0.11 the service answers 400.
    make: (n) => fill(n, '{"data":{},"template":"x","typst":"0.14","pdf":{', '"tagged":true,', '"tagged":true}}'),
  },
  {
    name: 'one pdf.signature key repeated ("reason":""), then an unknown one (refused)',
    status: 400,
    make: (n) => fill(n, '{"data":{},"template":"x","pdf":{"signature":{', '"reason":"",', '"x":1}}}'),
  },
  { name: 'tiny top-level keys ("k":0)', status: 200, make: (n) => fill(n, '{', '"k":0,', '"data":{},"template":"x"}') },
  { name: 'tiny keys in data ("":0)', status: 200, make: (n) => fill(n, '{"data":{', '"":0,', '"":0},"template":"x"}') },
  {
    name: 'deep nesting in data ([[[...]]])',
    status: 200,
    make: (n) =>
      Buffer.from(`{"data":{"a":${'['.repeat(Math.floor((n - 40) / 2))}${']'.repeat(Math.floor((n - 40) / 2))}},"template":"x"}`),
  },
  // The members after a large `data` are walked backward (src/bytes/data-end.ts): quotes, backslashes, many members.
  // The template is one line comment, so that Typst has nothing to typeset.
  {
    name: 'escaped quotes in a template after data (\\")',
    status: 200,
    make: (n) => fill(n, '{"data":{"a":[1]},"template":"// ', '\\"', '"}'),
  },
  {
    name: 'escaped backslashes and quotes after data (\\\\\\")',
    status: 200,
    make: (n) => fill(n, '{"data":{"a":[1]},"template":"// ', '\\\\\\"', '"}'),
  },
  { name: 'tiny top-level keys after data ("k":0)', status: 200, make: (n) => fill(n, '{"data":{"a":[1]},', '"k":0,', '"template":"x"}') },
  {
    // Each walk from the back would give up at the array and cross the long string: one walk per body.
    name: 'empty data objects repeated before an array and a long string',
    status: 200,
    make: (n) => {
      const tail = `"x":[],"t":"${'a'.repeat(Math.floor(n / 2))}","template":"x"}`;
      return fill(n, '{', '"data":{},', tail);
    },
  },
  {
    name: 'small objects after data ("p":{"a":1})',
    status: 200,
    make: (n) => fill(n, '{"data":{"a":[1]},', '"p":{"a":1},', '"template":"x"}'),
  },
  { name: 'escape run in the template (\\n)', status: 200, make: (n) => fill(n, '{"data":{},"template":"', '\\n', '"}') },
  { name: 'escape run in the template (\\u00e9)', status: 200, make: (n) => fill(n, '{"data":{},"template":"', '\\u00e9', '"}') },
  { name: 'base64 with whitespace between every character', status: 200, make: (n) => fill(n, `${HEAD}"f.bin":"`, 'A ', '"}}') },
  {
    name: 'JPEG of 2-byte segments before its SOF',
    status: 200,
    make: (n) => Buffer.from(`${HEAD}"j.jpg":"${b64(segmentsJpeg(Math.floor(((n - 60) * 3) / 4)))}"}}`),
  },
  {
    name: 'GIF with a comment of 1-byte sub-blocks',
    status: 200,
    make: (n) => Buffer.from(`${HEAD}"g.gif":"${b64(subBlocksGif(Math.floor(((n - 60) * 3) / 4)))}"}}`),
  },
];
