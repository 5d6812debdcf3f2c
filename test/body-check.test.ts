/**
 * The byte-level body check (src/bytes/) against trusted oracles, with
 * fast-check: JSON.parse (after a fatal UTF-8 decode and one BOM dropped)
 * for the verdict, the template text, `data` and the shape errors; atob and
 * Buffer.from for base64; the naming rule in plain string operations for asset names; a
 * Map for repeated asset names. Bodies of adversarial shapes (support/
 * body-shapes.ts) are checked at 2.5 and 10 MiB: the work must grow
 * linearly.
 * FUZZ_SCALE multiplies the case counts (the nightly set runs more).
 */
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../src/api-values.js';
import { nameProblem } from '../src/bytes/asset-names.js';
import { base64Invalid, decodeAssetValue, decodeBase64 } from '../src/bytes/base64.js';
import { bodyBuffer, copyIntoBody, releaseBody } from '../src/retention/body-pool.js';
import { BodyChecker } from '../src/request/check-thread.js';
import { errorBody } from '../src/bytes/error-body.js';
import { checkBody, type BodyCheck } from '../src/bytes/json-check.js';
import type { BodyLayout } from '../src/bytes/layout.js';
import { MESSAGES } from '../src/messages.js';
import { unescapeJsonString } from '../src/bytes/json-string.js';
import { BODY_SHAPES } from './support/body-shapes.js';
import { runs } from './support/fuzz-scale.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

type Parsed = { ok: true; value: unknown } | { ok: false };

function oracle(body: Uint8Array): Parsed {
  const bytes = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body;
  try {
    return { ok: true, value: JSON.parse(utf8.decode(bytes)) };
  } catch {
    return { ok: false };
  }
}

const NOT_JSON = /^Request body (is not valid JSON|is not valid UTF-8|is empty)/;
const messageOf = (check: BodyCheck) => (check.ok ? undefined : 'message' in check.error ? check.error.message : 'an asset error');
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const hasLoneSurrogate = (s: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
const anyLoneSurrogate = (v: unknown): boolean =>
  typeof v === 'string'
    ? hasLoneSurrogate(v)
    : Array.isArray(v)
      ? v.some(anyLoneSurrogate)
      : isObject(v)
        ? Object.entries(v).some(([k, x]) => hasLoneSurrogate(k) || anyLoneSurrogate(x))
        : false;

/** The shape error JSON.parse's value calls for (assets aside), in the order the service reports them. */
function expectedShape(value: unknown): string | undefined {
  if (!isObject(value)) return 'Request body must be a JSON object with fields "data" and "template"';
  if (!Object.hasOwn(value, 'data')) return 'Missing required field "data": expected a JSON object';
  if (!Object.hasOwn(value, 'template')) return 'Missing required field "template": expected a string of Typst markup';
  if (!isObject(value.data)) return 'Field "data" must be a JSON object';
  if (typeof value.template !== 'string') return 'Field "template" must be a string of Typst markup';
  if (hasLoneSurrogate(value.template)) return 'template surrogate';
  if (anyLoneSurrogate(value.data))
    return 'Field "data" contains an unpaired surrogate escape (\\uD800 to \\uDFFF alone): Typst cannot read it';
  return undefined;
}

/** Checks one body against the oracle: verdict, shape message, template bytes and data. */
function agrees(body: Uint8Array): void {
  const expected = oracle(body);
  const check = checkBody(body);
  const message = messageOf(check);
  assert.equal(
    !(message !== undefined && NOT_JSON.test(message)),
    expected.ok,
    `verdict on ${JSON.stringify(Buffer.from(body).toString('latin1').slice(0, 300))}: ${message}`,
  );
  if (!expected.ok) return;
  const value = expected.value as Record<string, unknown>;
  const shape = expectedShape(value);
  if (shape === 'template surrogate') {
    assert.match(
      message ?? '',
      /^Field "template" contains an unpaired surrogate escape \(\\u[0-9A-F]{4}\) on line \d+, column \d+ of the template/,
    );
    return;
  }
  if (shape !== undefined || (Object.hasOwn(value, 'assets') && value.assets !== null)) {
    if (shape !== undefined) assert.equal(message, shape);
    return;
  }
  assert.ok(check.ok, message);
  const template = unescapeJsonString(body, check.layout.template);
  assert.deepEqual(template, Buffer.from(value.template as string), 'template bytes');
  const data = Buffer.from(body.subarray(check.layout.data.start, check.layout.data.end)).toString('utf8');
  assert.deepEqual(JSON.parse(data), value.data, 'data range');
}

/** A JSON text of `value`, with every string written with random escapes and whitespace between tokens. */
function write(value: unknown, choices: () => number): string {
  const ws = () => ['', '', '', ' ', '\n', '\t', '\r\n  '][choices() % 7]!;
  const str = (s: string) => {
    let out = '"';
    for (const ch of s) {
      const code = ch.codePointAt(0)!;
      const pick = choices() % 4;
      if (ch === '"' || ch === '\\' || code < 0x20 || (pick === 0 && code < 0x10000)) {
        const short: Record<string, string> = {
          '"': '\\"',
          '\\': '\\\\',
          '\b': '\\b',
          '\f': '\\f',
          '\n': '\\n',
          '\r': '\\r',
          '\t': '\\t',
          '/': '\\/',
        };
        const hex = code.toString(16).padStart(4, '0');
        out += short[ch] && pick !== 1 ? short[ch] : `\\u${pick === 2 ? hex.toUpperCase() : hex}`;
      } else if (code >= 0x10000 && pick === 1) {
        out += [...ch.split('')].map((u) => `\\u${u.charCodeAt(0).toString(16)}`).join('');
      } else out += ch;
    }
    return `${out}"`;
  };
  if (typeof value === 'string') return str(value);
  if (Array.isArray(value)) return `[${ws()}${value.map((v) => write(v, choices)).join(`${ws()},${ws()}`)}${ws()}]`;
  if (isObject(value))
    return `{${ws()}${Object.entries(value)
      .map(([k, v]) => `${str(k)}${ws()}:${ws()}${write(v, choices)}`)
      .join(`${ws()},${ws()}`)}${ws()}}`;
  return JSON.stringify(value) ?? 'null';
}

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('= Title\n#data.a', '\ufeff= BOM', 'a\ud800b', '\udc00', '😀\r\nx'),
);
const json = fc.jsonValue({ maxDepth: 4 });
const numbers = fc.constantFrom(
  '-0',
  '0.0e-0',
  '1E+400',
  '1e999',
  '-1.5e-7',
  '01',
  '+1',
  '.5',
  '1.',
  '1e',
  '-',
  '0x1',
  '1_000',
  'NaN',
  'Infinity',
  '9007199254740993',
  `1${'0'.repeat(400)}`,
);
const seeds = fc.array(fc.nat(), { minLength: 1, maxLength: 64 });

/** `body` with the byte at `p` changed to `byte` (how 0), `byte` inserted before it (1), or it removed (2). */
function broken(body: Buffer, p: number, byte: number, how: number): Buffer {
  if (how === 0) return Buffer.from(body).fill(byte, p, p + 1);
  if (how === 1) return Buffer.concat([body.subarray(0, p), Buffer.from([byte]), body.subarray(p)]);
  return Buffer.concat([body.subarray(0, p), body.subarray(p + 1)]);
}

function chooser(list: number[]): () => number {
  let i = 0;
  return () => list[i++ % list.length]!;
}

describe('the body check agrees with JSON.parse', () => {
  it(`on generated bodies, written with random escapes and whitespace (${runs(3000)} cases)`, () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), json, { maxKeys: 5 }),
        text,
        seeds,
        fc.boolean(),
        fc.boolean(),
        (data, template, choices, bom, extra) => {
          const body: Record<string, unknown> = extra ? { x: [1, { y: null }], data, template, z: 'w' } : { template, data };
          const written = write(body, chooser(choices));
          agrees(Buffer.concat([bom ? BOM : Buffer.alloc(0), Buffer.from(written)]));
        },
      ),
      { numRuns: runs(3000) },
    );
  });

  it(`on bodies with the wrong shape, duplicate keys and odd numbers (${runs(2000)} cases)`, () => {
    const fieldValue = fc.oneof(json, text, fc.constant(null));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('data', 'template', 'assets', 'd\\u0061ta', 'other', 'temp\\u006Cate'), fieldValue), {
          maxLength: 5,
        }),
        numbers,
        seeds,
        (entries, number, choices) => {
          const pick = chooser(choices);
          const parts = entries.map(([k, v]) => `"${k}":${pick() % 5 === 0 ? number : write(v, pick)}`);
          agrees(
            Buffer.from(pick() % 7 === 0 ? `[${parts.map((p) => p.split(':').slice(1).join(':')).join(',')}]` : `{${parts.join(',')}}`),
          );
        },
      ),
      { numRuns: runs(2000) },
    );
  });

  it(`on broken bodies: bytes changed, inserted, removed, and every truncation (${runs(1500)} cases)`, () => {
    const nasty = fc.constantFrom(
      0x00,
      0x09,
      0x0a,
      0x1f,
      0x22,
      0x2c,
      0x3a,
      0x5b,
      0x5c,
      0x5d,
      0x7b,
      0x7d,
      0x7f,
      0x80,
      0xbf,
      0xc0,
      0xc3,
      0xe0,
      0xed,
      0xf0,
      0xf4,
      0xf5,
      0xff,
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), json, { maxKeys: 3 }),
        text,
        fc.nat(),
        fc.oneof(nasty, fc.integer({ min: 0, max: 255 })),
        fc.nat(2),
        (data, template, at, byte, how) => {
          const body = Buffer.from(JSON.stringify({ data, template }));
          const p = at % body.length;
          agrees(broken(body, p, byte, how));
          agrees(body.subarray(0, p));
        },
      ),
      { numRuns: runs(1500) },
    );
  });

  it('on invalid UTF-8: overlong forms, encoded surrogates, cut sequences, bytes that never start one', () => {
    const sequences = [
      [0xc0, 0x80],
      [0xc1, 0xbf],
      [0xe0, 0x80, 0x80],
      [0xed, 0xa0, 0x80],
      [0xed, 0xbf, 0xbf],
      [0xf0, 0x80, 0x80, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0xe2, 0x82],
      [0x80],
      [0xfe],
      [0xc3],
    ];
    for (const sequence of sequences) {
      for (const where of ['data', 'template', 'key', 'outside']) {
        const bad = Buffer.from(sequence).toString('latin1');
        const body =
          where === 'data'
            ? `{"data":{"s":"${bad}"},"template":"x"}`
            : where === 'template'
              ? `{"data":{},"template":"${bad}"}`
              : where === 'key'
                ? `{"data":{"${bad}":1},"template":"x"}`
                : `{"data":{},"template":"x"}${bad}`;
        const bytes = Buffer.from(body, 'latin1');
        agrees(bytes);
        const check = checkBody(bytes);
        assert.ok(!check.ok && 'message' in check.error);
        assert.match(check.error.message, /^Request body is not valid UTF-8 \(byte \d+\)$/);
      }
    }
  });

  it('on deep nesting, with no limit of its own', () => {
    // Comparing values this deep would overflow the test's own stack: the verdict and the data range are compared.
    for (const depth of [1, 100, 5_000, 100_000]) {
      for (const data of [`{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`, `{"deep":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`]) {
        const body = Buffer.from(`{"data":${data},"template":"x"}`);
        assert.equal(oracle(body).ok, true);
        const check = checkBody(body);
        assert.ok(check.ok);
        assert.equal(body.toString('utf8', check.layout.data.start, check.layout.data.end), data);
      }
      const unbalanced = Buffer.from(`{"data":{"deep":${'['.repeat(depth)}${']'.repeat(depth - 1)}},"template":"x"}`);
      assert.equal(oracle(unbalanced).ok, false);
      assert.match(messageOf(checkBody(unbalanced)) ?? '', NOT_JSON);
    }
  });
});

describe('a large body leaves `data` to Typst where Typst reads exactly what the body holds', () => {
  // Every body counts as large here (largeDataBytes 0), so the quick check runs on small generated bodies.
  const quick = (body: Uint8Array) => checkBody(body, { maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS, largeDataBytes: 0 });
  const exact = (body: Uint8Array) => checkBody(body, { maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS, largeDataBytes: Infinity });
  const withoutFlag = ({ dataUnchecked: _, ...layout }: BodyLayout) => layout;

  /** What Typst's json() (serde_json) reads: valid JSON without unpaired surrogates; more it refuses, never less. */
  function typstReads(bytes: Uint8Array): boolean {
    try {
      return !anyLoneSurrogate(JSON.parse(utf8.decode(bytes)));
    } catch {
      return false;
    }
  }

  /**
   * The quick check refuses as the exact one does, word for word; what it lets
   * through with `data` unchecked either is what the exact check finds (when
   * Typst reads the range), or is a range Typst refuses, which the worker then
   * checks exactly.
   */
  function holds(body: Uint8Array): void {
    const fast = quick(body);
    const slow = exact(body);
    const shown = JSON.stringify(Buffer.from(body).toString('latin1').slice(0, 300));
    if (!fast.ok || !fast.layout.dataUnchecked) {
      assert.deepEqual(fast, slow, shown);
      return;
    }
    const data = body.subarray(fast.layout.data.start, fast.layout.data.end);
    if (!typstReads(data)) return;
    assert.ok(slow.ok, `${shown}: ${messageOf(slow)}`);
    assert.deepEqual(withoutFlag(fast.layout), slow.layout, shown);
  }

  const member = fc.oneof(
    fc.constantFrom('"typst":"0.14"', '"typst":null', '"pdf":{"standard":"a-2b","tagged":true}', '"pdf":{}', '"x":{"y":[1]}', '"x":[1]'),
    fc.constantFrom(
      '"pdf":{"einvoice":{"xml":"in\\u0076oice.xml","profile":"BASIC WL"}}',
      '"pdf":{"einvoice":{}}',
      '"pdf":{"standard":"a-3b","einvoice":{"xml":"a/b.xml"}}',
      '"pdf":{"einvoice":{"profile":"none","profile":"BASIC"},"tagged":1,"tagged":false}',
      '"pdf":{"signature":{"reason":1,"x":2},"signature":{"reason":"r","reason":"s"}}',
    ),
    fc.constantFrom(
      '"assets":{"a.txt":"YQ=="}',
      '"assets":{}',
      '"data":{"b":[2]}',
      '"data":{"c":"d"}',
      '"template":"t\\"q\\\\"',
      '"n":-1.5e3',
    ),
    fc.tuple(fc.string(), json).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`),
  );

  it(`on bodies with members of every kind before and after data (${runs(3000)} cases)`, () => {
    fc.assert(
      fc.property(
        fc.array(member, { maxLength: 3 }),
        fc.dictionary(fc.string(), json, { maxKeys: 4 }),
        fc.array(member, { maxLength: 4 }),
        text,
        seeds,
        (before, data, after, template, choices) => {
          const pick = chooser(choices);
          const parts = [...before, `"data":${write(data, pick)}`, ...after];
          parts.splice(pick() % (parts.length + 1), 0, `"template":${JSON.stringify(template)}`);
          holds(Buffer.from(`{${parts.join(',')}}`));
        },
      ),
      { numRuns: runs(3000) },
    );
  });

  it(`on broken bodies: bytes changed, inserted, removed, and truncations (${runs(2000)} cases)`, () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), json, { maxKeys: 3 }),
        fc.array(member, { maxLength: 3 }),
        text,
        fc.nat(),
        fc.constantFrom(0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x20, 0x00, 0x61, 0x31),
        fc.nat(2),
        (data, after, template, at, byte, how) => {
          const body = Buffer.from(`{"data":${JSON.stringify(data)},${[...after, `"template":${JSON.stringify(template)}`].join(',')}}`);
          const p = at % body.length;
          holds(broken(body, p, byte, how));
          holds(body.subarray(0, p));
        },
      ),
      { numRuns: runs(2000) },
    );
  });

  it('finds the end of a data object that holds more than plain values, without reading it', () => {
    const data = `{"rows":[${'{"a":"x"},'.repeat(1000)}{"a":"y"}]}`;
    const body = Buffer.from(`{"data":${data},"template":"= #data.rows.len()","typst":"0.14"}`);
    const check = quick(body);
    assert.ok(check.ok && check.layout.dataUnchecked);
    assert.equal(body.toString('utf8', check.layout.data.start, check.layout.data.end), data);
    assert.equal(check.layout.typst, '0.14');
    // The same body with the object broken inside: the range is the same, and Typst refuses it.
    const broken = Buffer.from(body.toString().replace('{"a":"y"}', '{"a":"y",}'));
    const guess = quick(broken);
    assert.ok(guess.ok && guess.layout.dataUnchecked);
    assert.equal(typstReads(broken.subarray(guess.layout.data.start, guess.layout.data.end)), false);
    assert.match(
      messageOf(exact(broken)) ?? '',
      /^Request body is not valid JSON: unexpected character at line 1, column \d+ \(byte \d+\)$/,
    );
  });
});

describe('messages of the body check', () => {
  const message = (body: string | Buffer) => {
    const check = checkBody(typeof body === 'string' ? Buffer.from(body) : body);
    return check.ok ? 'ok' : 'message' in check.error ? check.error.message : errorBody(Buffer.from(body), check.error).toString();
  };

  it('say where invalid JSON breaks', () => {
    assert.equal(
      message('{"data": {}, template: "x"}'),
      'Request body is not valid JSON: unexpected character at line 1, column 14 (byte 13)',
    );
    assert.equal(
      message('{"data":{\n  "a": [1, 2,'),
      'Request body is not valid JSON: unexpected end of input at line 2, column 14 (byte 23)',
    );
    assert.equal(
      message('{"data":{"a":"x\ty"},"template":""}'),
      'Request body is not valid JSON: control character in string at line 1, column 16 (byte 15)',
    );
    assert.equal(
      message('{"data":{"a":"\\q"},"template":""}'),
      'Request body is not valid JSON: invalid escape at line 1, column 15 (byte 14)',
    );
    assert.equal(
      message('{"data":{"a":1.e5},"template":""}'),
      'Request body is not valid JSON: invalid number at line 1, column 16 (byte 15)',
    );
    assert.equal(
      message('{"data":{},"template":""} {}'),
      'Request body is not valid JSON: unexpected data after the JSON value at line 1, column 27 (byte 26)',
    );
    assert.equal(message('{"data":{"s":"é"}, x'), 'Request body is not valid JSON: unexpected character at line 1, column 20 (byte 20)');
  });

  it('name the field and what was expected', () => {
    assert.equal(message(''), 'Request body is empty: expected a JSON object with fields "data" and "template"');
    assert.equal(message(Buffer.from(BOM)), 'Request body is empty: expected a JSON object with fields "data" and "template"');
    assert.equal(message('"x"'), 'Request body must be a JSON object with fields "data" and "template"');
    assert.equal(message('{"template":5}'), 'Missing required field "data": expected a JSON object');
    assert.equal(message('{"data":5}'), 'Missing required field "template": expected a string of Typst markup');
    assert.equal(message('{"data":[],"template":5}'), 'Field "data" must be a JSON object');
    assert.equal(message('{"data":{},"template":5}'), 'Field "template" must be a string of Typst markup');
    assert.equal(
      message('{"data":{},"template":"a\\nb\\nc \\udfff"}'),
      'Field "template" contains an unpaired surrogate escape (\\uDFFF) on line 3, column 3 of the template: Typst text must be valid Unicode',
    );
    assert.equal(
      message('{"data":{"k\\ud800":1},"template":""}'),
      'Field "data" contains an unpaired surrogate escape (\\uD800 to \\uDFFF alone): Typst cannot read it',
    );
    assert.equal(
      message('{"data":{},"template":"","assets":[]}'),
      'Field "assets" must be a JSON object mapping file names to base64 contents',
    );
    assert.equal(message('{"data":{},"template":"","assets":null}'), 'ok');
  });

  it('name the asset at fault, quoting its name as sent, cut when long', () => {
    const asset = (name: string, value: string) => message(`{"data":{},"template":"","assets":{"ok.png":"AAAA","${name}":${value}}}`);
    assert.equal(asset('../x', '"AAAA"'), '{"error":"Asset \\"../x\\": name must not have a \\".\\" or \\"..\\" path segment"}');
    assert.equal(
      asset('/abs.png', '"AAAA"'),
      '{"error":"Asset \\"/abs.png\\": name must be a relative path: it must not start with \\"/\\""}',
    );
    assert.equal(asset('a//b', '"AAAA"'), '{"error":"Asset \\"a//b\\": name has an empty path segment"}');
    assert.equal(
      asset('a\\\\b', '"AAAA"'),
      '{"error":"Asset \\"a\\\\b\\": name must not hold a backslash: path segments are joined by \\"/\\""}',
    );
    assert.equal(asset('a\\u0007b', '"AAAA"'), '{"error":"Asset \\"a\\u0007b\\": name must not hold control characters"}');
    assert.equal(asset('Company Logo é.png', '"AAAA"'), 'ok');
    assert.equal(asset('x.png', '5'), '{"error":"Asset \\"x.png\\": value must be a string of base64 or a data: URL with ;base64"}');
    assert.equal(asset('x.png', '"AA*A"'), '{"error":"Asset \\"x.png\\": not valid base64 (character 3 of the value)"}');
    assert.equal(
      asset('x.png', '"data:image/png,abc"'),
      '{"error":"Asset \\"x.png\\": only base64 data: URLs are accepted (data:<type>;base64,...)"}',
    );
    const long = 'a'.repeat(300);
    assert.equal(asset(long, '"AAAA"'), `{"error":"Asset \\"${'a'.repeat(100)}...\\": name is longer than 255 bytes of UTF-8"}`);
    // A cut never splits an escape.
    const escaped = `${'b'.repeat(97)}\\u00e9${'c'.repeat(200)}`;
    assert.match(asset(escaped, '"AAAA"'), new RegExp(`^\\{"error":"Asset \\\\"${'b'.repeat(97)}\\.\\.\\.\\\\"`));
    const many = Array.from({ length: 1001 }, (_, i) => `"f${i}":""`).join(',');
    assert.equal(message(`{"data":{},"template":"","assets":{${many}}}`), 'Field "assets" has more than 1000 entries');
    for (const body of ['{"data":{},"template":"","assets":{"a":"AAAA"}}', '{"data":{},"template":"","assets":{"a":5,"a":"AAAA"}}'])
      assert.equal(message(body), 'ok');
  });
});

describe('asset names and values', () => {
  /** The rule in words: printable Unicode in segments joined by "/", none empty, "." or ".."; no "\\", no leading "/" or "~"; 255 bytes. */
  const valid = (name: string) =>
    name.length > 0 &&
    !/^[/~]/.test(name) &&
    ![...name].some((c) => c === '\\' || c.codePointAt(0)! < 0x20 || (c.codePointAt(0)! >= 0x7f && c.codePointAt(0)! <= 0x9f)) &&
    Buffer.byteLength(name) <= 255 &&
    !name.split('/').some((s) => s === '' || s === '.' || s === '..');

  it(`names: the same verdict as the rule in plain string operations (${runs(3000)} cases)`, () => {
    const piece = fc.constantFrom(
      'a',
      'Z',
      '0',
      '.',
      '..',
      '_',
      '-',
      '/',
      '//',
      ' ',
      'é',
      '\\',
      ':',
      'logo.png',
      'img',
      '~',
      '\u0085',
      '\u007f',
      '\t',
      '日本',
      '😀',
      'x'.repeat(100),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(piece, { maxLength: 12 }).map((p) => p.join('')),
          fc.string({ maxLength: 300 }),
          fc.string({ unit: 'grapheme', maxLength: 100 }),
        ),
        (name) => {
          // Buffer.from writes a lone surrogate as U+FFFD, a printable character: the oracle sees the same text.
          const text = Buffer.from(name).toString();
          assert.equal(nameProblem(Buffer.from(name)) === null, valid(text), JSON.stringify(name));
        },
      ),
      { numRuns: runs(3000) },
    );
  });

  it(`names as raw bytes (a form's file names): valid UTF-8 and the same rule (${runs(2000)} cases)`, () => {
    const fatal = new TextDecoder('utf-8', { fatal: true });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), (bytes) => {
        let text: string | undefined;
        try {
          text = fatal.decode(bytes);
        } catch {
          text = undefined;
        }
        assert.equal(nameProblem(bytes) === null, text !== undefined && valid(text), JSON.stringify([...bytes]));
      }),
      { numRuns: runs(2000) },
    );
  });

  const validBase64 = (s: string) => {
    try {
      atob(s);
      return true;
    } catch {
      return false;
    }
  };

  it(`base64: the verdict of atob and the bytes of Buffer.from (${runs(4000)} cases)`, () => {
    const base64Text = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64').replace(/=+$/, '')),
      fc
        .tuple(fc.uint8Array({ maxLength: 48 }), fc.array(fc.constantFrom(' ', '\n', '\r\n', '\t', '\f'), { maxLength: 8 }))
        .map(([b, spaces]) => {
          const text = Buffer.from(b).toString('base64').split('');
          for (const space of spaces) text.splice(text.length ? spaces.length % text.length : 0, 0, space);
          return text.join('');
        }),
      fc.string({ unit: fc.constantFrom(...'ABCab01+/=-_ \n.*'.split('')), maxLength: 20 }),
    );
    fc.assert(
      fc.property(base64Text, (value) => {
        const bytes = Buffer.from(value, 'latin1');
        assert.equal(base64Invalid(bytes) === -1, validBase64(value), JSON.stringify(value));
        if (validBase64(value)) assert.deepEqual(decodeBase64(bytes), Buffer.from(value, 'base64'), JSON.stringify(value));
      }),
      { numRuns: runs(4000) },
    );
  });

  it('decodes a value with JSON escapes, and a data: URL', () => {
    const values = ['aGVs\\u0062G8=', 'data:image/svg+xml;BASE64,PHN2Zz4=', 'aGVsbG8g\\/\\/8=', 'aGVs\\nbG8='];
    const body = Buffer.from(values.map((v) => `"${v}"`).join(' '));
    let at = 0;
    const decoded = values.map((v) => {
      const range = { start: at + 1, end: at + 1 + v.length };
      at = range.end + 2;
      return decodeAssetValue(body, range);
    });
    assert.deepEqual(
      decoded.map((d) => d.toString('latin1')),
      ['hello', '<svg>', Buffer.from('aGVsbG8g//8=', 'base64').toString('latin1'), 'hello'],
    );
  });
});

describe('the body check is linear in the body, whatever its shape', () => {
  // A full collection before each timed check, so that no check pays for the garbage of the one before
  // (process.cpuUsage counts V8's collector threads too): on a loaded machine that alone made ratios of 15.
  setFlagsFromString('--expose-gc');
  const collectGarbage = runInNewContext('gc') as () => void;

  /** CPU milliseconds of the fastest of `times` checks of `body`. */
  function cpuMs(body: Buffer, times: number): number {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < times; i++) {
      collectGarbage();
      const before = process.cpuUsage();
      checkBody(body);
      const used = process.cpuUsage(before);
      best = Math.min(best, (used.user + used.system) / 1000);
    }
    return best;
  }

  // Work that grew as the square of the size would take 256 times as long for 16 times the bytes;
  // linear work takes 16 times as long. The bound (3 × linear) leaves room for a noisy shared machine,
  // where a bound of 2 × linear on a 4-fold spread failed now and then.
  const MIB = 1024 * 1024;
  for (const shape of BODY_SHAPES) {
    it(`${shape.name}: 10 MiB costs at most 48 × 0.625 MiB`, () => {
      const small = shape.make(MIB / 1.6);
      const large = shape.make(10 * MIB);
      assert.ok(large.length <= 10 * MIB && large.length > 9.9 * MIB, String(large.length));
      const check = checkBody(large);
      assert.equal(check.ok, shape.status === 200, messageOf(check));
      const ratio = cpuMs(large, 3) / Math.max(1, cpuMs(small, 3));
      assert.ok(ratio < 48, `10 MiB took ${ratio.toFixed(1)} × as long as 0.625 MiB`);
    });
  }

  it('1.49 million repeated asset entries (10 MB) are one asset, with the last value', () => {
    const body = Buffer.from(`{"data":{},"template":"x","assets":{${'"a":"",'.repeat(1_490_000)}"a":"QUJD"}}`);
    const check = checkBody(body);
    assert.ok(check.ok);
    assert.equal(check.layout.assets.length, 1);
    assert.equal(body.toString('latin1', check.layout.assets[0]!.value.start, check.layout.assets[0]!.value.end), 'QUJD');
  });
});

describe('repeated keys of pdf and of its objects', () => {
  it('count as JSON.parse counts them: the last alone, whatever an earlier one holds', () => {
    const body = Buffer.from(
      '{"data":{},"template":"x","pdf":{"tagged":"no","einvoice":{"profile":"none","xml":"a.xml","profile":"EN 16931"},"tagged":true}}',
    );
    const check = checkBody(body);
    assert.ok(check.ok, messageOf(check));
    const xml = body.indexOf('a.xml');
    assert.deepEqual(check.layout.pdf, { tagged: true, einvoice: { profile: 'EN 16931', xml: { start: xml, end: xml + 5 } } });
    // An earlier key that is none of pdf's is refused all the same: JSON.parse keeps it.
    const other = checkBody(Buffer.from('{"data":{},"template":"x","pdf":{"einvoice":{"x":1,"xml":"a.xml"}}}'));
    assert.equal(messageOf(other), MESSAGES.einvoiceKey);
  });
});

describe('repeated asset names resolve as a Map of the names would', () => {
  it(`last value wins, order of first appearance, names compared after unescaping (${runs(1500)} cases)`, () => {
    const pool = ['a', 'b.png', 'img/c.svg', 'A', '1', '0', 'x-y_z.txt', 'dd'];
    /** A name as written: each character plain or as a \u escape. */
    const written = (name: string, pick: () => number) =>
      Array.from(name, (c) => (pick() % 3 === 0 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c)).join('');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(pool.length - 1), fc.uint8Array({ maxLength: 6 })), { maxLength: 40 }),
        seeds,
        (entries, choices) => {
          const pick = chooser(choices);
          const expected = new Map<string, string>();
          const parts = entries.map(([n, content]) => {
            const name = pool[n]!;
            const value = Buffer.from(content).toString('base64');
            expected.set(name, value);
            return `"${written(name, pick)}":"${value}"`;
          });
          const body = Buffer.from(`{"data":{},"template":"","assets":{${parts.join(',')}}}`);
          const check = checkBody(body);
          assert.ok(check.ok, messageOf(check));
          const got = check.layout.assets.map((a) => [
            unescapeJsonString(body, a.name).toString(),
            body.toString('latin1', a.value.start, a.value.end),
          ]);
          assert.deepEqual(got, [...expected.entries()]);
        },
      ),
      { numRuns: runs(1500) },
    );
  });
});

describe('the first byte that breaks UTF-8', () => {
  /** One well-formed character at a time, each checked by isUtf8: the rule the service's single pass must agree with. */
  function reference(bytes: Uint8Array): number {
    for (let i = 0; i < bytes.length; ) {
      const b = bytes[i]!;
      if (b < 0x80) {
        i++;
        continue;
      }
      const width = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
      if (width === 0 || !isUtf8(bytes.subarray(i, i + width))) return i;
      i += width;
    }
    return bytes.length;
  }

  it(`is the one a character-by-character check finds (${runs(3000)} cases)`, () => {
    const piece = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 4 }).map((s) => [...Buffer.from(s)]),
      fc.array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 1, maxLength: 4 }),
      fc.constantFrom([0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe0, 0x9f, 0xbf], [0xf0, 0x8f, 0xbf, 0xbf], [0xc1, 0xbf]),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const content = Buffer.from(pieces.flat());
        const body = Buffer.concat([Buffer.from('{"data":{},"template":"'), content, Buffer.from('"}')]);
        const check = checkBody(body);
        const at = reference(body);
        if (at === body.length) assert.doesNotMatch(messageOf(check) ?? '', /UTF-8/);
        else assert.equal(messageOf(check), `Request body is not valid UTF-8 (byte ${at})`);
      }),
      { numRuns: runs(3000) },
    );
  });
});

describe('large bodies are checked on a thread of their own', () => {
  it('with the same outcome as on the event loop, the bytes moved there and back', async () => {
    const checker = new BodyChecker({ maxImagePixels: 100e6 });
    try {
      const bodies = [
        `{"data":{"pad":"${'p'.repeat(400_000)}"},"template":"x","assets":{"a":"QUJD","a":"REVG"}}`,
        `{"data":{"pad":"${'p'.repeat(400_000)}"},"template":"x","assets":{"../a":"QUJD"}}`,
        `{"data":{"pad":"${'p'.repeat(400_000)}"},"template":"x"`,
        '{"data":{},"template":"small, checked where it is"}',
      ];
      for (const text of bodies) {
        const original = Buffer.from(text);
        const sent = Buffer.from(text);
        const { bytes, check } = await checker.check(sent);
        assert.deepEqual(check, checkBody(original));
        assert.ok(bytes.equals(original));
        if (text.length > 256 * 1024) assert.equal(sent.length, 0, 'the memory was moved, not copied');
      }
    } finally {
      await checker.close();
    }
  });

  it('reads a body in a pool buffer where it is, and the pool gives back zeros', async () => {
    const checker = new BodyChecker({ maxImagePixels: 100e6 });
    try {
      for (const text of [
        `{"data":{"pad":"${'p'.repeat(400_000)}"},"template":"x","assets":{"a":"QUJD"}}`,
        `{"data":{"pad":"${'p'.repeat(400_000)}"},"template":"x","assets":{"../a":"QUJD"}}`,
      ]) {
        const original = Buffer.from(text);
        const sent = bodyBuffer(original.length);
        assert.ok(sent.buffer instanceof SharedArrayBuffer, 'a large body is in a pool buffer');
        // Copied in odd pieces, as Node's chunks come: every alignment of source and target.
        for (let at = 0; at < original.length; at += 65_531) copyIntoBody(original.subarray(at, at + 65_531), sent, at);
        const { bytes, check } = await checker.check(sent);
        assert.deepEqual(check, checkBody(original));
        assert.equal(bytes, sent, 'the same bytes, not moved');
        assert.ok(bytes.equals(original));
        releaseBody(bytes);
        assert.ok(
          sent.every((b) => b === 0),
          'released: zero-filled',
        );
      }
    } finally {
      await checker.close();
    }
  });
});
