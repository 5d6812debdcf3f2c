/**
 * `multipart/form-data` on POST /v1/pdf/generate against a real server:
 * the examples sent as files (as `curl -F` and browsers send them) give the
 * PDF the JSON body gives; asset names with spaces and non-ASCII letters
 * work either way; a malformed form is a 400 that says what is wrong, a
 * form over 10 MB a 413, any other content type a 415.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { formBody, type Part } from './support/form.js';
import { pdfAttachments, pdfText } from './support/poppler.js';
import { generate, startService, TEST_KEY, type Service, pdfBytesOf } from './support/service.js';

const example = (file: string) => readFileSync(new URL(`../../examples/${file}`, import.meta.url));
const playgroundRows = JSON.parse(readFileSync(new URL('../../playground/examples.json', import.meta.url), 'utf8')) as {
  id: string;
  typst?: string;
  pdf?: unknown;
}[];

let service: Service;
before(async () => {
  service = await startService({ WORKERS: '1', RATE_LIMIT_PER_MINUTE: '100000' });
});
after(async () => {
  await service?.stop();
});

async function post(body: BodyInit | Buffer, contentType?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${TEST_KEY}` };
  if (contentType) headers['content-type'] = contentType;
  return fetch(`${service.url}/v1/pdf/generate`, { method: 'POST', headers, body: body as BodyInit });
}

/** A FormData as fetch sends it: its own boundary, files as Blobs with their names. */
function formData(fields: Record<string, string>, files: Record<string, [string, Buffer]>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  for (const [name, [filename, bytes]] of Object.entries(files)) form.append(name, new Blob([new Uint8Array(bytes)]), filename);
  return form;
}

describe('the examples as files give the PDF the JSON body gives', () => {
  it('the report: template and data as files', async () => {
    const json = await pdfBytesOf(
      await generate(service, { data: JSON.parse(example('report.json').toString()), template: example('report.typ').toString() }),
    );
    const form = await pdfBytesOf(
      await post(formData({}, { template: ['report.typ', example('report.typ')], data: ['report.json', example('report.json')] })),
    );
    assert.equal(pdfText(form), pdfText(json));
    assert.ok(pdfText(form).length > 200);
  });

  it('the letter with its SVG letterhead as a file', async () => {
    const data = JSON.parse(example('letter.json').toString()) as Record<string, unknown>;
    const svg = example('letterhead.svg');
    const json = await pdfBytesOf(
      await generate(service, { data, template: example('letter.typ').toString(), assets: { 'letterhead.svg': svg.toString('base64') } }),
    );
    const form = await pdfBytesOf(
      await post(
        formData(
          {},
          { template: ['letter.typ', example('letter.typ')], data: ['letter.json', example('letter.json')], logo: ['letterhead.svg', svg] },
        ),
      ),
    );
    assert.equal(pdfText(form), pdfText(json));
  });

  it('the e-invoice: the engine and PDF options as fields', async () => {
    const row = playgroundRows.find((r) => r.id === 'einvoice')!;
    const data = JSON.parse(example('einvoice.json').toString()) as Record<string, unknown>;
    const json = await pdfBytesOf(
      await generate(service, { data, template: example('einvoice.typ').toString(), typst: row.typst, pdf: row.pdf }),
    );
    const res = await post(
      formData(
        { typst: row.typst!, pdf: JSON.stringify(row.pdf) },
        { template: ['einvoice.typ', example('einvoice.typ')], data: ['einvoice.json', example('einvoice.json')] },
      ),
    );
    const form = await pdfBytesOf(res);
    assert.equal(res.headers.get('x-typst-version'), '0.14.2');
    assert.equal(pdfText(form), pdfText(json));
    assert.deepEqual(pdfAttachments(form), ['factur-x.xml']);
  });

  it('template and data as plain fields, in a form written out byte by byte', async () => {
    const body = formBody(
      [
        { name: 'template', value: '= Hello #data.name\n#read("notes/Rechnung Müller.txt")' },
        { name: 'data', value: '{"name": "form"}' },
        { name: 'file', filename: 'notes/Rechnung Müller.txt', value: 'read as sent', type: 'text/plain' },
      ],
      '----boundary--with--dashes',
    );
    const text = pdfText(await pdfBytesOf(await post(body, 'multipart/form-data; boundary="----boundary--with--dashes"')));
    assert.match(text, /Hello form/);
    assert.match(text, /read as sent/);
  });

  it('the boundary parameter, not a "; boundary=" inside another parameter\'s quoted value', async () => {
    const body = formBody(
      [
        { name: 'template', value: '= Read by #data.boundary' },
        { name: 'data', value: '{"boundary": "the real one"}' },
      ],
      'real',
    );
    const text = pdfText(await pdfBytesOf(await post(body, 'multipart/form-data; charset="x; boundary=evil"; boundary=real')));
    assert.match(text, /Read by the real one/);
  });
});

describe("README's curl lines", () => {
  it('send the report, and the letter with its letterhead, as files', async () => {
    const root = new URL('../../', import.meta.url);
    for (const args of [
      ['-F', 'template=@examples/report.typ', '-F', 'data=@examples/report.json'],
      [
        '-F',
        'template=@examples/letter.typ',
        '-F',
        'data=@examples/letter.json',
        '-F',
        'asset=@examples/letterhead.svg',
        '-F',
        'typst=0.11',
      ],
    ]) {
      const pdf = execFileSync(
        'curl',
        ['-sS', '--fail-with-body', ...args, '-H', `Authorization: Bearer ${TEST_KEY}`, `${service.url}/v1/pdf/generate`],
        { cwd: root },
      );
      assert.equal(pdf.subarray(0, 5).toString(), '%PDF-');
      assert.ok(pdfText(pdf).length > 100);
    }
  });

  it("warn when a file's path is sent without the @, and not when the file is", async () => {
    const root = new URL('../../', import.meta.url);
    const warningsOf = (template: string) => {
      const head = execFileSync(
        'curl',
        ['-sS', '--fail-with-body', '-o', '/dev/null', '-D', '-', '-F', template, '-F', 'data=@examples/report.json'].concat([
          '-H',
          `Authorization: Bearer ${TEST_KEY}`,
          `${service.url}/v1/pdf/generate`,
        ]),
        { cwd: root },
      ).toString();
      return /^x-typst-warnings: (.*)\r$/im.exec(head)?.[1];
    };
    assert.equal(
      warningsOf('template=examples/report.typ'),
      `1; the template is one word ending in ".typ" and was compiled as that text: send the file's contents instead (with curl, -F template=@file.typ)`,
    );
    assert.equal(warningsOf('template=@examples/report.typ'), undefined);
  });
});

describe('asset names', () => {
  it('take spaces and non-ASCII letters, in JSON and as file names', async () => {
    const template = '#read("Company Logo.txt") #read("Rechnung_Müller.xml") #read("日本/請求書.txt")';
    const files = { 'Company Logo.txt': 'one', 'Rechnung_Müller.xml': 'two', '日本/請求書.txt': 'three' };
    const json = await pdfBytesOf(
      await generate(service, {
        data: {},
        template,
        assets: Object.fromEntries(Object.entries(files).map(([name, text]) => [name, Buffer.from(text).toString('base64')])),
      }),
    );
    assert.match(pdfText(json), /one two three/);
    const parts: Part[] = [
      { name: 'template', value: template },
      { name: 'data', value: '{}' },
    ];
    for (const [name, text] of Object.entries(files)) parts.push({ name: 'asset', filename: name, value: text });
    const form = await pdfBytesOf(await post(formBody(parts, 'b'), 'multipart/form-data; boundary=b'));
    assert.equal(pdfText(form), pdfText(json));
  });

  it('still refuse a ".." segment, a backslash and a control character, quoting the name', async () => {
    for (const [name, problem] of [
      ['../x.png', 'name must not have a "." or ".." path segment'],
      ['a\\b.png', 'name must not hold a backslash: path segments are joined by "/"'],
      ['a\u0001b.png', 'name must not hold control characters'],
    ] as const) {
      const res = await generate(service, { data: {}, template: '', assets: { [name]: 'AAAA' } });
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { error: `Asset "${name}": ${problem}` });
    }
    const res = await post(
      formBody(
        [
          { name: 'template', value: '' },
          { name: 'data', value: '{}' },
          { name: 'f', filename: 'img/../"x".png', value: 'x' },
        ],
        'b',
      ),
      'multipart/form-data; boundary=b',
    );
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'Asset "img/../"x".png": name must not have a "." or ".." path segment' });
  });
});

describe('refusals', () => {
  const send = (parts: Part[]) => post(formBody(parts, 'b'), 'multipart/form-data; boundary=b');
  const minimal: Part[] = [
    { name: 'template', value: 'x' },
    { name: 'data', value: '{}' },
  ];
  const cases: [string, () => Promise<Response>, number, string][] = [
    ['no boundary', () => post('x', 'multipart/form-data'), 400, 'Content-Type multipart/form-data must name its boundary (boundary=...)'],
    [
      'a boundary named twice',
      () => post(formBody(minimal, 'b'), 'multipart/form-data; boundary=b; boundary=c'),
      400,
      'Content-Type parameters are malformed: each is ;name=value, the value a token or a quoted string (escaping only " and \\), and no name twice',
    ],
    [
      'an unterminated part',
      () => post(formBody(minimal, 'b').subarray(0, -10), 'multipart/form-data; boundary=b'),
      400,
      'Malformed multipart form: a part is not terminated (the closing boundary is missing)',
    ],
    [
      'a duplicate template',
      () => send([...minimal, { name: 'template', value: 'y' }]),
      400,
      'Multipart form has more than one "template" part',
    ],
    [
      'an unknown non-file field',
      () => send([...minimal, { name: 'colour', value: 'red' }]),
      400,
      'Form field "colour" is not known: fields are "template", "data", "typst" and "pdf", and every file part is an asset under its file name',
    ],
    [
      'data that is not JSON',
      () => send([minimal[0]!, { name: 'data', value: '{"a":}' }]),
      400,
      'Part "data" is not valid JSON: unexpected character at line 1, column 6',
    ],
    ['data that is an array', () => send([minimal[0]!, { name: 'data', value: '[1]' }]), 400, 'Field "data" must be a JSON object'],
    [
      'no template',
      () => send([minimal[1]!]),
      400,
      'Missing required part "template": expected the Typst text in a part named "template", a file (-F template=@letter.typ) or a field; a file part of any other name is an asset',
    ],
    [
      'no data',
      () => send([minimal[0]!]),
      400,
      'Missing required part "data": expected a JSON object in a part named "data", a file (-F data=@data.json) or a field',
    ],
    ['an unknown engine', () => send([...minimal, { name: 'typst', value: '0.12' }]), 400, 'Field "typst" must be one of "0.11", "0.14"'],
    [
      'a template Typst refuses, placed as sent',
      () => send([{ name: 'template', value: '\n#foo' }, minimal[1]!]),
      400,
      'Typst error on line 2, column 2: unknown variable: foo',
    ],
    [
      'another content type',
      () => post('template=x', 'application/x-www-form-urlencoded'),
      415,
      'Content-Type must be application/json or multipart/form-data',
    ],
  ];
  for (const [what, request, status, error] of cases) {
    it(`${what}: ${status}`, async () => {
      const res = await request();
      assert.equal(res.status, status);
      const body = (await res.json()) as { error: string };
      assert.equal(body.error.split('\n')[0], error);
    });
  }

  it('a form over 10 MB: 413', async () => {
    const res = await send([...minimal, { name: 'f', filename: 'big.bin', value: Buffer.alloc(10 * 1024 * 1024) }]);
    assert.equal(res.status, 413);
    assert.deepEqual(await res.json(), { error: 'Payload exceeds 10MB limit' });
  });
});
