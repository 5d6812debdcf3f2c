/**
 * The multipart form parser (src/request/multipart.ts) and the form check
 * (form-check.ts) against busboy as the oracle, with fast-check: forms of
 * random boundaries, names and file names with quoted-string escapes and
 * RFC 8187 `filename*`, extra headers in any case, preambles, epilogues,
 * and contents full of boundary-like bytes give the parts busboy gives;
 * every truncated form is refused by both. Forms of adversarial shapes
 * (many tiny parts, near-boundaries in content, header floods) are parsed
 * at 2.5 and 10 MiB: the work must grow linearly.
 * FUZZ_SCALE multiplies the case counts (the nightly set runs more).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import busboy from 'busboy';
import fc from 'fast-check';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../src/api-values.js';
import { bodyBuffer, copyIntoBody, releaseBody } from '../src/retention/body-pool.js';
import { BodyChecker } from '../src/request/check-thread.js';
import { errorBody } from '../src/bytes/error-body.js';
import { checkForm } from '../src/request/form-check.js';
import { mediaTypeParameters } from '../src/request/media-type.js';
import { formBoundary, MAX_HEADER_BYTES, MAX_HEADER_LINES, parseForm } from '../src/request/multipart.js';
import { runs } from './support/fuzz-scale.js';

const OPTIONS = { maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS };

/** busboy's own reader of a Content-Type header: the oracle for the boundary. */
const busboyContentType = (
  createRequire(import.meta.url)('busboy/lib/utils.js') as {
    parseContentType(value: string): { params: Record<string, string | undefined> } | undefined;
  }
).parseContentType;

/** A part as the oracle reports it: its name, its file name if it has one, its bytes. */
interface Seen {
  name: string;
  filename?: string;
  bytes: Buffer;
}

const ORACLE_WAIT_MS = 5000;

/** busboy gave no verdict to compare with: a value it cannot decode, or silence for ORACLE_WAIT_MS. */
const NO_VERDICT = Symbol('no verdict');

/**
 * What busboy makes of `body`: its parts in order, null if it finds the form
 * malformed, or NO_VERDICT.
 */
function oracle(body: Buffer, boundary: string): Promise<Seen[] | null | typeof NO_VERDICT> {
  return new Promise((settle) => {
    const silent = setTimeout(() => settle(NO_VERDICT), ORACLE_WAIT_MS);
    const resolve = (verdict: Seen[] | null | typeof NO_VERDICT) => {
      clearTimeout(silent);
      settle(verdict);
    };
    const seen: Seen[] = [];
    let failed = false;
    let undecodable = false;
    const parser = busboy({
      headers: { 'content-type': `multipart/form-data; boundary="${boundary}"` },
      preservePath: true,
      defParamCharset: 'utf8',
      limits: { fieldSize: Number.POSITIVE_INFINITY },
    });
    // busboy reports an empty name as none: the same thing, for the comparison.
    // A value busboy cannot decode (a charset it does not know: it ignores none) leaves no verdict to compare with.
    parser.on('field', (name, value) => {
      if (value === undefined) undecodable = true;
      else seen.push({ name: name ?? '', bytes: Buffer.from(value) });
    });
    parser.on('file', (name, stream, info) => {
      const part: Seen = { name: name ?? '', filename: info.filename, bytes: Buffer.alloc(0) };
      seen.push(part);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => (part.bytes = Buffer.concat(chunks)));
      stream.on('error', () => (failed = true));
    });
    parser.on('error', () => {
      failed = true;
      resolve(null);
    });
    parser.on('close', () => resolve(undecodable ? NO_VERDICT : failed ? null : seen));
    // busboy goes on reading parts after the close delimiter when they come in the same write (found by the mangled-forms
    // property: a delimiter doubled into `--B--` with more parts after it); by RFC 2046 what follows it is the epilogue.
    // So the bytes after its first close delimiter are a write of their own, which busboy then ignores, as it should.
    // The close delimiter's `--`: at the very start (a form of no parts), or after a CRLF.
    const closing = `--${boundary}--`;
    const afterCrlf = body.indexOf(`\r\n${closing}`, 0, 'latin1');
    const close = body.subarray(0, closing.length).equals(Buffer.from(closing, 'latin1')) ? 0 : afterCrlf < 0 ? -1 : afterCrlf + 2;
    const epilogue = close < 0 ? body.length : close + closing.length;
    parser.write(body.subarray(0, epilogue));
    parser.end(body.subarray(epilogue));
  });
}

/** What the service's parser makes of `body` (a copy: names are decoded in place). */
function mine(body: Buffer, boundary: string): Seen[] | null {
  const copy = Buffer.from(body);
  const parsed = parseForm(copy, Buffer.from(boundary), Number.POSITIVE_INFINITY);
  if (!parsed.ok) return null;
  return parsed.parts.map((part) => {
    const seen: Seen = {
      name: copy.toString('utf8', part.name.start, part.name.end),
      bytes: copy.subarray(part.content.start, part.content.end),
    };
    // busboy hands a field's value over decoded as UTF-8: the same decode, to compare like with like.
    // busboy takes an empty file name for none.
    if (part.filename && part.filename.end > part.filename.start)
      seen.filename = copy.toString('utf8', part.filename.start, part.filename.end);
    else seen.bytes = Buffer.from(seen.bytes.toString('utf8'));
    return seen;
  });
}

const BCHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'()+_,-./:=?";
const boundaryArb = fc.string({ unit: fc.constantFrom(...BCHARS.split('')), minLength: 1, maxLength: 70 });

/** Text for a name or file name: plain, spaces, non-ASCII, and the two characters a quoted string escapes. */
const nameText = fc.string({
  unit: fc.constantFrom('a', 'Z', '0', ' ', '.', '/', '-', 'é', '日', '😀', '"', '\\', "'", ';', '=', '%'),
  maxLength: 12,
});

const quoted = (text: string) => `"${text.replace(/["\\]/g, '\\$&')}"`;
const extended = (text: string) =>
  `UTF-8''${Array.from(Buffer.from(text), (b) => (/[A-Za-z0-9.\-_~!#$&+^`|]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('')}`;

const partArb = (boundary: string) =>
  fc.record({
    name: nameText,
    filename: fc.option(
      fc.oneof(
        fc.record({ text: nameText, star: fc.constant(false) }),
        fc.record({ text: nameText.filter((t) => t.length > 0), star: fc.constant(true) }),
      ),
      { nil: undefined },
    ),
    header: fc.constantFrom('Content-Disposition', 'content-disposition', 'CONTENT-DISPOSITION'),
    spacing: fc.constantFrom(';', '; ', ' ;\t'),
    extra: fc.array(fc.constantFrom('Content-Type: text/plain; charset=utf-8', 'X-Note: any\tvalue', 'content-type: image/png'), {
      maxLength: 2,
    }),
    content: fc
      .array(
        fc.oneof(
          fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b)),
          fc
            .constantFrom(
              '\r\n',
              '--',
              '\r',
              '\n',
              boundary,
              `--${boundary}`,
              `\r\n--${boundary.slice(0, -1)}`,
              `\r\n-${boundary}`,
              `\r\n--${boundary}`,
            )
            .map((s) => Buffer.from(s)),
        ),
        { maxLength: 8 },
      )
      .map((pieces) => Buffer.concat(pieces)),
  });

type PartShape = ReturnType<typeof partArb> extends fc.Arbitrary<infer T> ? T : never;

const delimiterIn = (bytes: Buffer, boundary: string) =>
  bytes.includes(`\r\n--${boundary}`) || bytes.subarray(0, 2 + boundary.length).equals(Buffer.from(`--${boundary}`));

/** A form's bytes; undefined when a content holds the delimiter itself (the form would mean something else). */
function formOf(boundary: string, parts: PartShape[], preamble: Buffer, epilogue: Buffer): Buffer | undefined {
  const chunks: Buffer[] = [preamble.length > 0 ? Buffer.concat([preamble, Buffer.from('\r\n')]) : Buffer.alloc(0)];
  if (preamble.length > 0 && (delimiterIn(Buffer.concat([Buffer.from('\r\n'), preamble]), boundary) || preamble.includes(`--${boundary}`)))
    return undefined;
  for (const part of parts) {
    if (
      Buffer.concat([Buffer.from('\r\n'), part.content, Buffer.from('\r\n')])
        .subarray(0, -2)
        .includes(`\r\n--${boundary}`)
    )
      return undefined;
    let disposition = `${part.header}: form-data${part.spacing}name=${quoted(part.name)}`;
    if (part.filename)
      disposition += `${part.spacing}${part.filename.star ? `filename*=${extended(part.filename.text)}` : `filename=${quoted(part.filename.text)}`}`;
    const headers = [disposition, ...part.extra].join('\r\n');
    chunks.push(Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`), part.content, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--`), epilogue);
  return Buffer.concat(chunks);
}

const formArb = boundaryArb.chain((boundary) =>
  fc
    .record({
      parts: fc.array(partArb(boundary), { maxLength: 6 }),
      preamble: fc.oneof(
        fc.constant(Buffer.alloc(0)),
        fc.string({ maxLength: 20 }).map((s) => Buffer.from(s)),
      ),
      epilogue: fc.oneof(
        fc.constant(Buffer.alloc(0)),
        fc.constant(Buffer.from('\r\n')),
        fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from(b)),
      ),
    })
    .map(({ parts, preamble, epilogue }) => ({ boundary, body: formOf(boundary, parts, preamble, epilogue) })),
);

describe('the form parser against busboy', () => {
  it(`finds the parts busboy finds, names, file names and bytes (${runs(2000)} cases)`, async () => {
    await fc.assert(
      fc.asyncProperty(formArb, async ({ boundary, body }) => {
        fc.pre(body !== undefined);
        const expected = await oracle(body!, boundary);
        assert.notEqual(expected, null, 'a well-formed form');
        assert.deepEqual(mine(body!, boundary), expected);
      }),
      { numRuns: runs(2000) },
    );
  });

  it(`refuses every form cut short before its closing boundary, as busboy does (${runs(1500)} cases)`, async () => {
    await fc.assert(
      fc.asyncProperty(formArb, fc.double({ min: 0, max: 1, noNaN: true }), async ({ boundary, body }, where) => {
        fc.pre(body !== undefined);
        const close = body!.lastIndexOf(`--${boundary}--`);
        const cut = body!.subarray(0, Math.floor(where * (close + 2 + boundary.length)));
        assert.equal(mine(cut, boundary), null, JSON.stringify(cut.toString('latin1')));
        const verdict = await oracle(cut, boundary);
        if (verdict !== NO_VERDICT) assert.equal(verdict, null);
      }),
      { numRuns: runs(1500) },
    );
  });

  it(`never throws, and is refused by busboy too whenever it refuses, on mangled forms (${runs(1500)} cases)`, async () => {
    // Bytes flipped, dropped or doubled anywhere: a verdict either way, and never a part busboy would not see.
    await fc.assert(
      fc.asyncProperty(
        formArb,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'drop', 'double')), {
          minLength: 1,
          maxLength: 4,
        }),
        async ({ boundary, body }, edits) => {
          fc.pre(body !== undefined && body.length > 0);
          let bytes = Buffer.from(body!);
          for (const [at, value, edit] of edits) {
            const i = at % bytes.length;
            if (edit === 'set') bytes[i] = value;
            else if (edit === 'drop') bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
            else bytes = Buffer.concat([bytes.subarray(0, i + 1), bytes.subarray(i)]);
            if (bytes.length === 0) return;
          }
          const got = mine(bytes, boundary);
          if (got !== null) {
            // Where the parser accepts, its parts are busboy's (it is stricter, never looser).
            const expected = await oracle(bytes, boundary);
            if (expected !== null && expected !== NO_VERDICT) assert.deepEqual(got, expected);
          }
        },
      ),
      {
        numRuns: runs(1500),
        // Found here: a doubled dash makes a close delimiter with parts after it, which busboy read on (see oracle); a
        // dropped byte puts a boundary line right after a part's blank line, which busboy reads as part of the content.
        examples: [
          [
            {
              boundary: 'B',
              body: Buffer.from(
                '--B\r\nContent-Disposition: form-data; name="x"\r\n\r\n\0--B\r\nContent-Disposition: form-data; name="y"\r\n\r\nv\r\n--B--',
              ),
            },
            [[49, 0, 'drop']],
          ],
          [
            {
              boundary: "-8u2z'td4e",
              body: Buffer.from(
                'IA0KLS0tOHUyeid0ZDRlDQpDb250ZW50LURpc3Bvc2l0aW9uOiBmb3JtLWRhdGE7IG5hbWU9IiI7IGZpbGVuYW1lKj1VVEYtOCcn' +
                  'YSUyRg0KDQoNCi0tLTh1MnondGQ0ZQ0KQ29udGVudC1EaXNwb3NpdGlvbjogZm9ybS1kYXRhOyBuYW1lPSLwn5iAYSI7IGZpbGVu' +
                  'YW1lKj1VVEYtOCcnJTIwYWElMjclMjUlMjVhJUU2JTk3JUE1JUU2JTk3JUE1JTIwDQoNCgAALS0tOHUyeid0ZDRlDQotLS04dTJ6' +
                  'J3RkNGUNCkNvbnRlbnQtRGlzcG9zaXRpb246IGZvcm0tZGF0YSA7CW5hbWU9ImFhYWFcXGHwn5iAYWFhIiA7CWZpbGVuYW1lKj1V' +
                  'VEYtOCcnYSUzRCUzRCUyRiUyN2ElQzMlQTklNUMlMjUlNUMNCmNvbnRlbnQtdHlwZTogaW1hZ2UvcG5nDQoNCg0KLS04dTJ6J3Rk' +
                  'NGUNCi0tOHUyeid0ZDRlLS0tOHUyeid0ZDRlAAAAAAAAAAAtLS04dTJ6J3RkNGUAAAAAAAAAAA0KLS0tOHUyeid0ZDRlDQpDb250' +
                  'ZW50LURpc3Bvc2l0aW9uOiBmb3JtLWRhdGEgOwluYW1lPSJhYfCfmIBhYSINCkNvbnRlbnQtVHlwZTogdGV4dC9wbGFpbjsgY2hh' +
                  'cnNldD11dGYtOA0KWC1Ob3RlOiBhbnkJdmFsdWUNCg0KAAAAAAAAAAAAAC04dTJ6J3RkNGUAAAAAAAAAAC0tLTh1MnondGQ0ZQ0K' +
                  'LS0tOHUyeid0ZDRlDQpDb250ZW50LURpc3Bvc2l0aW9uOiBmb3JtLWRhdGEgOwluYW1lPSJhYeaXpSIgOwlmaWxlbmFtZT0iYVwi' +
                  'YfCfmIBhXFxhIg0KY29udGVudC10eXBlOiBpbWFnZS9wbmcNClgtTm90ZTogYW55CXZhbHVlDQoNCg0AAAAAAAANCi0tLTh1Mnon' +
                  'dGQ0ZS0t',
                'base64',
              ),
            },
            [
              [0, 0, 'drop'],
              [1242429133, 0, 'double'],
            ],
          ],
        ],
      },
    );
  });
});

describe('a form read by the service', () => {
  const form = (boundary: string, parts: string[]) =>
    Buffer.from(`${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\n`);
  const disposition = (name: string, filename?: string) =>
    `Content-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}\r\n`;
  const refusal = (body: Buffer, boundary = 'b') => {
    const check = checkForm(body, Buffer.from(boundary), OPTIONS);
    return check.ok ? 'ok' : JSON.parse(errorBody(body, check.error).toString()).error;
  };

  it('makes the layout of a JSON body: the template, the data object, each asset by name, the engine and PDF options', () => {
    const body = form('b', [
      `${disposition('template', 'main.typ')}\r\n= Title`,
      `${disposition('data')}\r\n {"a": 1} \n`,
      `${disposition('asset', 'img/Company Logo.svg')}\r\n<svg/>`,
      `${disposition('typst')}\r\n0.14`,
      `${disposition('pdf')}\r\n{"standard": "a-3b"}`,
      `${disposition('empty', '')}\r\n`,
    ]);
    const check = checkForm(body, Buffer.from('b'), OPTIONS);
    assert.ok(check.ok);
    const text = (r: { start: number; end: number }) => body.toString('utf8', r.start, r.end);
    assert.equal(text(check.layout.template), '= Title');
    assert.equal(text(check.layout.data), '{"a": 1}');
    assert.deepEqual(
      check.layout.assets.map((a) => [text(a.name), text(a.value)]),
      [['img/Company Logo.svg', '<svg/>']],
    );
    assert.equal(check.layout.typst, '0.14');
    assert.deepEqual(check.layout.pdf, { standard: 'a-3b' });
    assert.equal(check.layout.form, true);
  });

  it('passes over a byte order mark before the JSON of a data or pdf part, as before a JSON body', () => {
    const bom = '\ufeff';
    const body = form('b', [
      `${disposition('template')}\r\nx`,
      `${disposition('data', 'data.json')}\r\n${bom}{"a": 1}`,
      `${disposition('pdf')}\r\n${bom}{}`,
    ]);
    const check = checkForm(body, Buffer.from('b'), OPTIONS);
    assert.ok(check.ok);
    assert.equal(body.toString('utf8', check.layout.data.start, check.layout.data.end), '{"a": 1}');
    // Only at the start: anywhere else it is no JSON.
    assert.match(
      refusal(form('b', [`${disposition('template')}\r\nx`, `${disposition('data')}\r\n {}${bom}`])),
      /^Part "data" is not valid JSON/,
    );
  });

  it('says what is wrong with a form that breaks the rules', () => {
    const ok = [`${disposition('template')}\r\nx`, `${disposition('data')}\r\n{}`];
    const boundaryInHeaders =
      "Malformed multipart form: a boundary line comes among a part's headers or right after their blank line (an empty part is its headers, a blank line, then CRLF and the boundary)";
    const cases: [Buffer, string][] = [
      [Buffer.from('no boundary here'), 'Malformed multipart form: the boundary named in Content-Type does not open it'],
      [form('b', ok).subarray(0, -8), 'Malformed multipart form: a part is not terminated (the closing boundary is missing)'],
      [form('b', [...ok, `${disposition('data')}\r\n{}`]), 'Multipart form has more than one "data" part'],
      [
        form('b', [...ok, `${disposition('f', 'a.txt')}\r\n1`, `${disposition('g', 'a.txt')}\r\n2`]),
        'Asset "a.txt": more than one file under this name',
      ],
      [
        form('b', [...ok, `${disposition('f', '~data.json')}\r\n1`]),
        'Asset "~data.json": name must not start with "~" (kept for the service\'s own files)',
      ],
      [form('b', [...ok, 'Content-Type: text/plain\r\n\r\nx']), 'Malformed multipart form: a part has no Content-Disposition header'],
      [
        form('b', [...ok, 'Content-Disposition: attachment; name="x"\r\n\r\nx']),
        "Malformed multipart form: a part's Content-Disposition must be form-data",
      ],
      [
        form('b', [...ok, 'Content-Disposition: form-data; name="x\r\n\r\nx']),
        "Malformed multipart form: a part's Content-Disposition is malformed",
      ],
      [form('b', [...ok, 'Content-Disposition: form-data\r\n\r\nx']), "Malformed multipart form: a part's Content-Disposition has no name"],
      [
        form('b', [...ok, 'Content-Disposition: form-data; name="x"\r\n folded\r\n\r\nx']),
        'Malformed multipart form: a part has a malformed header line',
      ],
      [
        form('b', [...ok, `Content-Disposition: form-data; name="f"; filename*=ISO-8859-1''%E9\r\n\r\nx`]),
        'Malformed multipart form: a filename* must be in UTF-8',
      ],
      [
        // The next boundary right after a part's blank line: busboy would read the next part's headers as this one's content.
        Buffer.from(`--b\r\n${disposition('x')}\r\n${form('b', ok).toString()}`),
        boundaryInHeaders,
      ],
      // Blanks after a boundary: RFC 2046's transport padding, after which busboy drops the part without a word.
      [
        Buffer.from(form('b', ok).toString().replace('--b\r\n', '--b \r\n')),
        'Malformed multipart form: a boundary line must end with CRLF (no blanks before it), or with "--" at the end of the form',
      ],
      ...[
        'name="a"; name="b"',
        'NAME="a"; name="b"',
        'name="f"; filename=""; filename="b"',
        "name=\"f\"; filename*=UTF-8''a; FILENAME*=UTF-8''b",
      ].map((parameters): [Buffer, string] => [
        form('b', [...ok, `Content-Disposition: form-data; ${parameters}\r\n\r\nx`]),
        "Malformed multipart form: a part's Content-Disposition names name, filename or filename* twice",
      ]),
      [
        form('b', [...ok, `${'a:\r\n'.repeat(MAX_HEADER_LINES)}${disposition('f', 'a')}\r\nx`]),
        'Malformed multipart form: a part has more than 1000 header lines',
      ],
      [
        form('b', [...ok, `X: ${'y'.repeat(MAX_HEADER_BYTES)}\r\n${disposition('f', 'a')}\r\nx`]),
        'Malformed multipart form: the headers of a part are longer than 16 KiB',
      ],
      [
        Buffer.from(form('b', [`${disposition('template')}\r\n\xff`, ok[1]!]).toString('utf8'), 'latin1'),
        'Part "template" is not valid UTF-8 (byte 0 of the part)',
      ],
      [
        form('b', [ok[0]!, `${disposition('data')}\r\n{"a":\n}`]),
        'Part "data" is not valid JSON: unexpected character at line 2, column 1',
      ],
      [
        form('b', [ok[0]!, `${disposition('data')}\r\n{} {}`]),
        'Part "data" is not valid JSON: unexpected data after the JSON value at line 1, column 4',
      ],
      [
        form('b', [...ok, `${disposition('pdf')}\r\n{"standard": "a-9"}`]),
        'Field "pdf.standard" must be one of "1.4", "1.5", "1.6", "1.7", "2.0", "a-1b", "a-1a", "a-2b", "a-2u", "a-2a", "a-3b", "a-3u", "a-3a", "a-4", "a-4f", "a-4e", "ua-1"',
      ],
      [
        form('b', [...ok, `${disposition('pdf')}\r\nstandard=a-3b`]),
        'Part "pdf" is not valid JSON: unexpected character at line 1, column 1',
      ],
      [
        form('b', [...ok, `${disposition('pdf')}\r\n{"standard":\n "a-3b"`]),
        'Part "pdf" is not valid JSON: unexpected end of input at line 2, column 8',
      ],
      [
        form('b', [...ok, `${disposition('pdf')}\r\n["a-3b"]`]),
        'Part "pdf" must be a JSON object with the optional fields "standard", "tagged", "einvoice" and "signature"',
      ],
      [
        form('b', [...ok, `${disposition('n\\"ame')}\r\nx`]),
        'Form field "n"ame" is not known: fields are "template", "data", "typst" and "pdf", and every file part is an asset under its file name',
      ],
    ];
    for (const [body, expected] of cases) assert.equal(refusal(body), expected, body.toString('latin1').slice(0, 200));
    // A boundary may hold `:`, and its line then reads as a header line too: refused, as it is right after a blank line.
    const colon = form('a:b', ok).toString().replace('\r\n\r\n', '\r\n--a:b\r\n\r\n');
    assert.equal(refusal(Buffer.from(colon), 'a:b'), boundaryInHeaders);
    const many = form('b', [...ok, ...Array.from({ length: 1001 }, (_, i) => `${disposition('f', `${i}.txt`)}\r\n`)]);
    assert.equal(refusal(many), 'Multipart form has more than 1000 files (assets)');
    const tooMany = form('b', [...ok, ...Array.from({ length: 1005 }, () => `${disposition('f', '')}\r\n`)]);
    assert.equal(refusal(tooMany), 'Multipart form has more than 1004 parts');
  });

  it(`quotes a refused file name in valid JSON, whatever bytes it holds (${runs(2000)} cases)`, () => {
    const fatal = new TextDecoder('utf-8', { fatal: true });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 40 }),
          fc.array(fc.constantFrom(0x0a, 0x22, 0x5c, 0x41, 0xc3, 0xa9, 0x7f), { maxLength: 60 }).map((b) => Uint8Array.from(b)),
        ),
        (name) => {
          const body = Buffer.from(name);
          const answer = errorBody(body, {
            status: 400,
            before: 'Asset "',
            name: { start: 0, end: body.length },
            after: '": bad',
            raw: true,
          });
          const { error } = JSON.parse(answer.toString()) as { error: string };
          let text: string | undefined;
          try {
            text = fatal.decode(name);
          } catch {
            text = undefined;
          }
          // A name of valid UTF-8 is quoted as it is; broken bytes come out one by one as \u00XX.
          const quoted =
            text === undefined
              ? Number.POSITIVE_INFINITY
              : [...text].reduce((n, c) => n + (c < ' ' || c === '\x7f' ? 6 : c === '"' || c === '\\' ? 2 : Buffer.byteLength(c)), 0);
          if (quoted <= 100) assert.equal(error, `Asset "${text}": bad`);
          else assert.match(error, /^Asset "[\s\S]*": bad$/);
        },
      ),
      { numRuns: runs(2000) },
    );
  });

  it('takes the boundary from Content-Type, quoted or not, and refuses none or a bad one', () => {
    const boundaryOf = (contentType: string) => {
      const parameters = mediaTypeParameters(contentType);
      return parameters === null ? null : formBoundary(parameters);
    };
    const noBoundary = 'Content-Type multipart/form-data must name its boundary (boundary=...)';
    const badBoundary =
      "The multipart boundary must be 1 to 70 of RFC 2046's characters: letters, digits, '()+_,-./:=? and spaces (not last)";
    assert.deepEqual(boundaryOf('multipart/form-data; boundary=abc'), Buffer.from('abc'));
    assert.deepEqual(boundaryOf('multipart/form-data; charset=utf-8; BOUNDARY="a b:c"'), Buffer.from('a b:c'));
    assert.equal(boundaryOf('multipart/form-data'), noBoundary);
    assert.equal(boundaryOf('multipart/form-data; boundary=""'), noBoundary);
    assert.equal(boundaryOf('multipart/form-data; boundary='), noBoundary);
    assert.equal(boundaryOf(`multipart/form-data; boundary=${'x'.repeat(71)}`), badBoundary);
    assert.equal(boundaryOf('multipart/form-data; boundary="a "'), badBoundary);
    assert.equal(boundaryOf('multipart/form-data; boundary="a\\\\b"'), badBoundary);
    // A "; boundary=" inside another parameter's quoted value is part of that value (a search took it for the boundary).
    assert.deepEqual(boundaryOf('multipart/form-data; charset="x; boundary=evil"; boundary=real'), Buffer.from('real'));
    // Refused as a whole: a name twice, an escape readers undo differently, no value, a stray character.
    for (const contentType of [
      'multipart/form-data; boundary=a; boundary=b',
      'multipart/form-data; boundary="a\\bc"',
      'multipart/form-data; boundary=a b',
      'multipart/form-data; boundary="abc"x',
      'multipart/form-data; boundary="abc',
    ])
      assert.equal(boundaryOf(contentType), null, contentType);
  });

  it(`reads the boundary busboy reads from any Content-Type both read (${runs(3000)} cases)`, () => {
    const piece = fc.constantFrom(';', ' ', '\t', '"', '\\', '=', 'boundary', 'BOUNDARY', 'charset', 'a', 'b:c', "x'y", 'é', ',');
    let both = 0;
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 14 }), (pieces) => {
        const contentType = `multipart/form-data${pieces.join('')}`;
        const mine = mediaTypeParameters(contentType);
        const theirs = busboyContentType(contentType);
        // Where busboy refuses the header, a proxy built on it refuses the request: only a boundary both read can differ.
        if (mine !== null && theirs !== undefined) {
          both++;
          assert.equal(mine.get('boundary'), theirs.params.boundary, contentType);
        }
      }),
      { numRuns: runs(3000) },
    );
    assert.ok(both > runs(3000) / 10, `${both} headers both read`);
  });
});

describe('large forms are checked on the checking thread', () => {
  it('with the outcome they get on the event loop, names decoded in place there, in a pool buffer or moved', async () => {
    const checker = new BodyChecker(OPTIONS);
    try {
      const big = (name: string) =>
        Buffer.from(
          `--b\r\nContent-Disposition: form-data; name="template"\r\n\r\nx\r\n` +
            `--b\r\nContent-Disposition: form-data; name="data"\r\n\r\n{"pad": "${'p'.repeat(400_000)}"}\r\n` +
            `--b\r\nContent-Disposition: form-data; name="f"; filename="${name}"\r\n\r\nfile\r\n--b--\r\n`,
        );
      for (const name of ['img/Company \\"Logo\\".png', '../x.png']) {
        const onLoop = Buffer.from(big(name));
        const expected = checkForm(onLoop, Buffer.from('b'), OPTIONS);
        const moved = await checker.check(big(name), Buffer.from('b'));
        assert.deepEqual(moved.check, expected);
        assert.ok(moved.bytes.equals(onLoop), 'the same bytes back, names decoded as on the loop');
        const original = big(name);
        const pooled = bodyBuffer(original.length);
        copyIntoBody(original, pooled, 0);
        const inPool = await checker.check(pooled, Buffer.from('b'));
        assert.equal(inPool.bytes, pooled, 'read where it is');
        assert.deepEqual(inPool.check, expected);
        releaseBody(pooled);
      }
    } finally {
      await checker.close();
    }
  });
});

describe('forms of adversarial shapes are parsed in linear time', () => {
  const MIB = 1024 * 1024;
  const boundary = `${'X'.repeat(69)}Y`;

  /** A form of about `size` bytes: `head`, then `unit` repeated, then the close. */
  const filled = (size: number, head: string, unit: string, tail = `\r\n--${boundary}--\r\n`) =>
    Buffer.from(head + unit.repeat(Math.floor((size - head.length - tail.length) / unit.length)) + tail, 'latin1');
  const start = `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\n`;
  const shapes: { name: string; make: (size: number) => Buffer; parts?: boolean }[] = [
    {
      name: 'many tiny parts',
      make: (size) =>
        filled(size, '', `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nx\r\n`, `--${boundary}--\r\n`),
      parts: true,
    },
    { name: 'near-boundaries in the content', make: (size) => filled(size, start, `\r\n--${boundary.slice(0, -1)}Z`) },
    // The content's first byte is not a dash: a boundary line right after the blank line is refused (a delimiter).
    { name: 'boundary-like bytes without the CRLF', make: (size) => filled(size, `${start}x`, `--${boundary}\n`) },
    { name: 'CR LF dashes', make: (size) => filled(size, start, '\r\n-\r\n--\r') },
    {
      name: 'header floods in every part',
      make: (size) =>
        filled(
          size,
          '',
          `--${boundary}\r\n${'X-A: b\r\n'.repeat(MAX_HEADER_LINES - 1)}Content-Disposition: form-data; name="f"; filename="a"\r\n\r\n\r\n`,
          `--${boundary}--\r\n`,
        ),
      parts: true,
    },
    {
      name: 'escaped file names',
      make: (size) =>
        filled(
          size,
          '',
          `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="${'\\"'.repeat(4000)}"\r\n\r\n\r\n`,
          `--${boundary}--\r\n`,
        ),
      parts: true,
    },
  ];

  /**
   * The least CPU ms a parse of each body took, over `times` rounds that take turns (so that a busy spell of the
   * machine falls on both), on a thread of its own. Its own: in this file's heap, full of the earlier tests'
   * objects, each collection of the large form's 90,000 parts cost more, and CI measured 52 to 92 ×.
   */
  async function cpuMs(bodies: Buffer[], times: number): Promise<number[]> {
    const parser = new URL('../src/request/multipart.js', import.meta.url).href;
    const thread = new Worker(
      `const { parentPort, workerData: { parser, bodies, times, boundary } } = require('node:worker_threads');
      require('node:v8').setFlagsFromString('--expose-gc');
      const collectGarbage = require('node:vm').runInNewContext('gc');
      import(parser).then(({ parseForm }) => {
        const best = bodies.map(() => Number.POSITIVE_INFINITY);
        for (let i = 0; i < times; i++) {
          bodies.forEach((body, b) => {
            const copy = Buffer.from(body);
            collectGarbage();
            const before = process.threadCpuUsage();
            parseForm(copy, Buffer.from(boundary), Number.POSITIVE_INFINITY);
            const used = process.threadCpuUsage(before);
            best[b] = Math.min(best[b], (used.user + used.system) / 1000);
          });
        }
        parentPort.postMessage(best);
      });`,
      { eval: true, workerData: { parser, bodies, times, boundary } },
    );
    try {
      const [best] = (await once(thread, 'message')) as [number[]];
      return best;
    } finally {
      await thread.terminate();
    }
  }

  for (const shape of shapes) {
    it(`${shape.name}: 10 MiB costs at most 48 × 0.625 MiB (linear: 16, square: 256), and is parsed whole`, async () => {
      const small = shape.make(MIB / 1.6);
      const large = shape.make(10 * MIB);
      assert.ok(large.length <= 10 * MIB && large.length > 9.9 * MIB, String(large.length));
      const parsed = parseForm(Buffer.from(large), Buffer.from(boundary), Number.POSITIVE_INFINITY);
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
      if (!shape.parts) assert.equal(parsed.parts.length, 1);
      const [largeMs, smallMs] = await cpuMs([large, small], 5);
      const ratio = largeMs! / Math.max(1, smallMs!);
      assert.ok(ratio < 48, `10 MiB took ${ratio.toFixed(1)} × as long as 0.625 MiB`);
    });
  }

  it('the service stops at its part limit: a form of 10 MiB of tiny parts is refused at once', () => {
    const body = shapes[0]!.make(10 * MIB);
    const before = process.cpuUsage();
    assert.equal(checkForm(body, Buffer.from(boundary), OPTIONS).ok, false);
    const used = process.cpuUsage(before);
    assert.ok((used.user + used.system) / 1000 < 100);
  });
});
