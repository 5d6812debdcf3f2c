/**
 * The text pre-check (src/bytes/text-runs.ts) against a simple oracle: the
 * JSON is decoded by JSON.parse, each string is split into code points,
 * cut into runs where a line may break, and measured in UTF-8 bytes with
 * Buffer.byteLength; marks are told by a Unicode property escape. Small
 * limits make runs long enough to matter in generated strings, and strings
 * are built of the characters the rule is about, escaped in every way JSON
 * allows. Then: the limits as the engines have them, on the shapes that
 * crashed them, and a scan linear in the body's size.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  isIdeographic,
  stringHazard,
  stringsAtMost,
  TEXT_LIMITS,
  type TextHazard,
  type TextLimits,
  valueHazard,
} from '../src/bytes/text-runs.js';

const MARK = /^\p{M}$/u;
const BREAK_AFTER = new Set([' ', '\t', '\n', '\r', '\u200b']);

/** Every hazard of one decoded string, by the rule as the module states it. */
function oracle(text: string, limits: TextLimits): { kind: TextHazard; at: number }[] {
  const found: { kind: TextHazard; at: number }[] = [];
  const chars = [...text];
  let runStart = 0;
  let offset = 0;
  let marks = 0;
  for (let k = 0; k < chars.length; k++) {
    const char = chars[k]!;
    const cp = char.codePointAt(0)!;
    const previous = k > 0 ? chars[k - 1]!.codePointAt(0)! : -1;
    if (k > 0 && (BREAK_AFTER.has(chars[k - 1]!) || (isIdeographic(previous) && isIdeographic(cp)))) runStart = offset;
    const length = Buffer.byteLength(char);
    const inRun = offset - runStart;
    if (length > 1 && inRun < limits.runByte && inRun + length > limits.runByte) found.push({ kind: 'run', at: k });
    marks = MARK.test(char) ? marks + 1 : 0;
    if (marks > limits.marksPerBase) found.push({ kind: 'marks', at: k });
    offset += length;
  }
  return found.sort((a, b) => a.at - b.at);
}

const firstOf = (text: string, limits: TextLimits) => oracle(text, limits)[0]?.kind;

/** The characters the rule is about, and JSON's own. */
const piece = fc.constantFrom(
  'a',
  'é',
  ' ',
  '\n',
  '\t',
  '\r',
  '中',
  'あ',
  '한',
  '😀',
  '\u200d',
  '\u0301',
  '\u0300',
  '€',
  '\u200b',
  '𠀀',
  '"',
  '\\',
  '/',
  'ب',
  '\u00a0',
  '\u00ad',
  '\u{1F3FB}',
  '\u{E0100}',
  '\ud800',
  '\udc00',
);
const text = fc.oneof(
  fc.array(piece, { maxLength: 80 }).map((parts) => parts.join('')),
  fc.array(fc.tuple(piece, fc.integer({ min: 1, max: 12 })), { maxLength: 12 }).map((parts) => parts.map(([p, n]) => p.repeat(n)).join('')),
  fc.string({ unit: 'binary', maxLength: 60 }),
);
const limits = fc.record({ runByte: fc.integer({ min: 1, max: 24 }), marksPerBase: fc.integer({ min: 1, max: 4 }) });

/** JSON text of `value`, with non-ASCII characters as they are, or as `\u` escapes (pairs for astral ones), and `/` escaped or not. */
const encodings = fc.constantFrom('plain', 'escaped', 'slashes');
function encode(value: unknown, how: string): string {
  const json = JSON.stringify(value);
  if (how === 'escaped') return json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (how === 'slashes') return json.replace(/\//g, '\\/');
  return json;
}

/** Every string of a parsed JSON value, keys included. */
function strings(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) for (const item of value) strings(item, into);
  else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      into.push(key);
      strings(item, into);
    }
  }
  return into;
}

const inBody = (json: string) => {
  // Something before and after, as in a request body.
  const body = Buffer.from(`{"x":1,"v":${json},"y":"\u00e9\u00e9"}`);
  const start = Buffer.byteLength('{"x":1,"v":');
  return { body, range: { start, end: start + Buffer.byteLength(json) } };
};

describe('text pre-check against its oracle', () => {
  it('a template (one JSON string): the first hazard, where the oracle finds it', () => {
    fc.assert(
      fc.property(text, limits, encodings, (t, l, how) => {
        const { body, range } = inBody(encode(t, how));
        const content = { start: range.start + 1, end: range.end - 1 };
        assert.equal(stringHazard(body, content, l), firstOf(t, l));
      }),
      { numRuns: 3000 },
    );
  });

  it('data (every string of a JSON value, keys too, each a run of its own)', () => {
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 4 }),
        // Many short strings: data the quote windows of stringsAtMost pass without a walk.
        fc.array(
          fc.array(piece, { maxLength: 3 }).map((parts) => parts.join('')),
          { maxLength: 40 },
        ),
        fc.dictionary(text, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, limits, encodings, (v, l, how) => {
        const { body, range } = inBody(encode(v, how));
        const found = valueHazard(body, range, l);
        const expected = new Set(strings(v).flatMap((s) => oracle(s, l).map((h) => h.kind)));
        if (found === undefined) assert.equal(expected.size, 0, `missed ${[...expected]}`);
        else assert.ok(expected.has(found), `${found} not among ${[...expected]}`);
      }),
      { numRuns: 2000 },
    );
  });
});

/** The longest string content in `range` as the scan bounds its strings: a quote outside opens one, inside an unescaped quote closes it. */
function longestString(body: Uint8Array, range: { start: number; end: number }): number {
  let longest = 0;
  let open = -1;
  for (let i = range.start; i < range.end; i++) {
    if (open < 0) {
      if (body[i] === 0x22) open = i + 1;
    } else if (body[i] === 0x5c) i++;
    else if (body[i] === 0x22) {
      longest = Math.max(longest, i - open);
      open = -1;
    }
  }
  return open < 0 ? longest : Math.max(longest, range.end - open);
}

describe('strings shown short without a walk', () => {
  it('never says so of bytes holding a longer string: quotes, runs of backslashes, escapes, anything', () => {
    const part = fc.constantFrom('"', '\\', '\\\\', '\\"', 'a', ' ', 'é', '\\u00e9', '\u0301', '{', ':', ',', '[', ']', '1');
    const bytes = fc.oneof(
      fc
        .array(fc.tuple(part, fc.integer({ min: 1, max: 6 })), { maxLength: 30 })
        .map((parts) => Buffer.from(parts.map(([p, n]) => p.repeat(n)).join(''))),
      fc.uint8Array({ maxLength: 120 }).map((b) => Buffer.from(b)),
    );
    let shown = 0;
    fc.assert(
      fc.property(bytes, fc.nat(8), fc.nat(8), fc.integer({ min: 1, max: 30 }), (body, cutStart, cutEnd, most) => {
        const range = { start: Math.min(cutStart, body.length), end: Math.max(Math.min(cutStart, body.length), body.length - cutEnd) };
        if (!stringsAtMost(body, range, most)) return;
        shown++;
        assert.ok(longestString(body, range) <= most, `a string of ${longestString(body, range)} bytes passed for at most ${most}`);
      }),
      { numRuns: 5000 },
    );
    assert.ok(shown > 100, `only ${shown} cases were shown short: the property tested little`);
  });

  it('passes data of short strings at the engines’ limits, and not a long one', () => {
    const records = Buffer.from(
      JSON.stringify({ records: Array.from({ length: 20000 }, (_, i) => ({ id: i, sku: `SKU-${i}`, text: 'é'.repeat(i % 50) })) }),
    );
    assert.equal(stringsAtMost(records, { start: 0, end: records.length }, 65_535), true);
    const long = Buffer.from(JSON.stringify({ a: 'x', s: `"${'a'.repeat(70000)}`, b: 'y' }));
    assert.equal(stringsAtMost(long, { start: 0, end: long.length }, 65_535), false);
    const numbers = Buffer.from(JSON.stringify({ n: Array.from({ length: 30000 }, (_, i) => i) }));
    assert.equal(stringsAtMost(numbers, { start: 0, end: numbers.length }, 65_535), false, 'no quote for a whole window: walked');
  });
});

describe('text pre-check at the engines’ limits', () => {
  const template = (t: string) => {
    const { body, range } = inBody(JSON.stringify(t));
    return stringHazard(body, { start: range.start + 1, end: range.end - 1 });
  };
  const data = (value: unknown) => {
    const { body, range } = inBody(JSON.stringify(value));
    return valueHazard(body, range);
  };

  it('refuses the runs that crashed both engines, in the template and in data', () => {
    assert.equal(template('é'.repeat(32768)), 'run');
    assert.equal(template(`Hello world, ${'é'.repeat(32768)}`), 'run');
    assert.equal(template(`${'a'.repeat(65534)}é`), 'run');
    assert.equal(template('ب'.repeat(32768)), 'run');
    assert.equal(template(Array(10000).fill('👨').join('\u200d')), 'run');
    assert.equal(template('\u00a0'.repeat(32768)), 'run');
    assert.equal(template('\u00ad'.repeat(32768)), 'run');
    assert.equal(template(`a${'\u0301'.repeat(70000)}`), 'marks');
    assert.equal(data({ s: 'é'.repeat(32768) }), 'run');
    assert.equal(data({ list: ['ok', { deep: 'é'.repeat(40000) }] }), 'run');
    assert.equal(data({ ['é'.repeat(32768)]: 1 }), 'run');
  });

  it('lets through the runs both engines typeset', () => {
    assert.equal(template('é'.repeat(32767)), undefined);
    assert.equal(template(`${'é'.repeat(32767)}a`), undefined);
    assert.equal(template(`${'a'.repeat(65535)}é`), undefined);
    assert.equal(template('a'.repeat(200000)), undefined);
    assert.equal(template(`${'é'.repeat(20000)} ${'é'.repeat(20000)}`), undefined);
    assert.equal(template(`${'é'.repeat(30000)}\n${'é'.repeat(30000)}`), undefined);
    assert.equal(template(`${'é'.repeat(20000)}\u200b${'é'.repeat(20000)}\u200b${'é'.repeat(20000)}`), undefined);
    assert.equal(template('中'.repeat(30000)), undefined);
    assert.equal(template('한'.repeat(30000)), undefined);
    assert.equal(template('😀'.repeat(20000)), undefined);
    assert.equal(template('€'.repeat(30000)), undefined, '65,535 is a multiple of 3: the cut falls between characters');
    assert.equal(template(`a${'\u0301'.repeat(32000)} a${'\u0301'.repeat(32000)}`), undefined);
    assert.equal(data({ a: 'é'.repeat(30000), b: 'é'.repeat(30000) }), undefined, 'strings are runs of their own');
  });

  it('counts escapes as the characters they stand for', () => {
    const escaped = (n: number) => Buffer.from(`"${'\\u00e9'.repeat(n)}"`);
    for (const [n, expected] of [
      [32767, undefined],
      [32768, 'run'],
    ] as const) {
      const body = escaped(n);
      assert.equal(stringHazard(body, { start: 1, end: body.length - 1 }), expected);
    }
    const broken = Buffer.from(`"${'\\u00e9'.repeat(20000)}\\n${'\\u00e9'.repeat(20000)}"`);
    assert.equal(stringHazard(broken, { start: 1, end: broken.length - 1 }), undefined);
  });

  it('is linear in the body: 8 times the bytes cost well under the 64 times a quadratic scan would', () => {
    const shapes: [string, (n: number) => Buffer][] = [
      ['one long string of é', (n) => Buffer.from(JSON.stringify({ s: 'é'.repeat(n / 2) }))],
      ['tiny strings', (n) => Buffer.from(`[${'"",'.repeat(n / 3)}""]`)],
      ['escapes', (n) => Buffer.from(JSON.stringify({ s: '"\\'.repeat(n / 4) }))],
      ['marks between spaces', (n) => Buffer.from(JSON.stringify({ s: 'a\u0301 '.repeat(n / 4) }))],
    ];
    const time = (body: Buffer) => {
      let best = Infinity;
      valueHazard(body, { start: 0, end: body.length >> 3 }, TEXT_LIMITS); // compiled before it is timed
      for (let round = 0; round < 5; round++) {
        const started = performance.now();
        valueHazard(body, { start: 0, end: body.length }, TEXT_LIMITS);
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    for (const [name, make] of shapes) {
      const small = time(make(1 << 20));
      const large = time(make(8 << 20));
      assert.ok(large < 32 * Math.max(small, 1), `${name}: 1 MiB ${small.toFixed(1)} ms, 8 MiB ${large.toFixed(1)} ms`);
    }
  });
});
