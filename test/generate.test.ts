/**
 * The generate endpoint end to end: real HTTP, real Typst, PDFs parsed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parsePdf } from './support/pdf.js';
import { generate, startService, type Service, pdfBytesOf, errorOf } from './support/service.js';

const pdfOf = async (res: Response) => parsePdf(await pdfBytesOf(res));

let service: Service;
before(async () => {
  service = await startService();
});
after(async () => {
  await service.stop();
});

describe('POST /v1/pdf/generate', () => {
  it('answers 200 with the PDF and the headers the API reference lists', async () => {
    const res = await generate(service, { data: { name: 'World' }, template: 'Hello #data.name' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    assert.equal(res.headers.get('content-disposition'), 'inline; filename="document.pdf"');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.equal(Number(res.headers.get('content-length')), bytes.length);
    assert.equal(Buffer.from(bytes.subarray(0, 5)).toString(), '%PDF-');
    const pdf = await parsePdf(bytes);
    assert.equal(pdf.pages, 1);
    assert.equal(pdf.text[0], 'Hello World');
    assert.equal(pdf.creator, 'Typst 0.11.1');
  });

  it('reads fields, nested fields and arrays of data', async () => {
    const data = {
      title: 'Q3',
      parent: { child: 'nested value' },
      metrics: [
        { name: 'Revenue', value: 10 },
        { name: 'Users', value: 20 },
      ],
    };
    const template = [
      'Title: #data.title',
      '',
      'Child: #data.parent.child',
      '',
      'Mapped: #data.metrics.map(m => m.name).join(", ")',
      '',
      '#for m in data.metrics [Row #m.name = #m.value. ]',
    ].join('\n');
    const pdf = await pdfOf(await generate(service, { data, template }));
    const text = pdf.text.join(' ');
    assert.match(text, /Title: Q3/);
    assert.match(text, /Child: nested value/);
    assert.match(text, /Mapped: Revenue, Users/);
    assert.match(text, /Row Revenue = 10\. Row Users = 20\./);
  });

  it('gives data the types json() gives: numbers stay numbers, null is none', async () => {
    const data = { i: 3, f: 2.5, b: true, n: null, s: '7', a: [1], o: {} };
    const template = '#for k in ("i", "f", "b", "n", "s", "a", "o") [#k:#type(data.at(k)) ]\n#(data.i + 1)';
    const pdf = await pdfOf(await generate(service, { data, template }));
    assert.equal(pdf.text[0]!.replace(/\s+/g, ''), 'i:integerf:floatb:booleann:nones:stringa:arrayo:dictionary4');
  });

  it('keeps the meaning of the first line: a heading gets an outline entry, a list item stays one', async () => {
    const heading = await pdfOf(await generate(service, { data: {}, template: '= Annual Report\nBody text.' }));
    assert.deepEqual(heading.outline, ['Annual Report']);
    const list = await pdfOf(await generate(service, { data: {}, template: '- first\n- second' }));
    assert.match(list.text[0]!, /•\s*first\s*•\s*second/);
    const numbered = await pdfOf(await generate(service, { data: {}, template: '+ one\n+ two' }));
    assert.match(numbered.text[0]!, /1\.\s*one\s*2\.\s*two/);
  });

  it('reaches keys that are not identifiers with data.at()', async () => {
    const data = { 'first-name': 'Ada', '1': 'one', 'with space': 'sp', ключ: 'unicode' };
    const template = '#data.at("first-name") #data.at("1") #data.at("with space") #data.at("ключ")';
    const pdf = await pdfOf(await generate(service, { data, template }));
    assert.equal(pdf.text[0], 'Ada one sp unicode');
  });

  it('prints markup characters from data literally', async () => {
    const data = { s: 'A & B #c $d$ *e* _f_ @g <h> `i` \\j' };
    const pdf = await pdfOf(await generate(service, { data, template: '#data.s' }));
    assert.equal(pdf.text[0], data.s);
  });

  it('runs multi-page documents', async () => {
    const template = '#for i in range(3) [Page #(i + 1) #pagebreak(weak: true)]';
    const pdf = await pdfOf(await generate(service, { data: {}, template }));
    assert.equal(pdf.pages, 3);
  });
});

describe('template errors', () => {
  it('names line and column of a syntax error, counted in the template as sent', async () => {
    const error = await errorOf(await generate(service, { data: {}, template: 'line one\nline two\n#let x = (' }), 400);
    assert.equal(error, 'Invalid Typst syntax on line 3, column 10: unclosed delimiter');
  });

  it('names line and column of an evaluation error', async () => {
    const error = await errorOf(await generate(service, { data: { a: 1 }, template: 'Hello\n  #data.missing' }), 400);
    assert.equal(error, 'Typst error on line 2, column 9: dictionary does not contain key "missing"');
  });

  it('reports a syntax error on line 1 as line 1', async () => {
    const error = await errorOf(await generate(service, { data: {}, template: '#{' }), 400);
    assert.match(error, /^Invalid Typst syntax on line 1, column \d+: /);
  });

  it('counts columns in characters', async () => {
    const error = await errorOf(await generate(service, { data: {}, template: 'ÄÖü😀 #nope' }), 400);
    assert.equal(error, 'Typst error on line 1, column 7: unknown variable: nope');
  });

  it('reports panic and type errors as evaluation errors', async () => {
    assert.equal(
      await errorOf(await generate(service, { data: {}, template: 'x\n#panic("stop here")' }), 400),
      'Typst error on line 2, column 2: panicked with: "stop here"',
    );
    assert.match(
      await errorOf(await generate(service, { data: {}, template: '#text(fill: 5)[x]' }), 400),
      /^Typst error on line 1, column 13: expected color/,
    );
  });

  it("cuts a message of Typst's after 4,096 characters, whole characters kept", async () => {
    // A million characters asked for; the prefix puts each 😀 (two UTF-16 units) across a unit count of 4,096.
    const error = await errorOf(await generate(service, { data: {}, template: '#assert(false, message: "a" + "😀" * 1000000)' }), 400);
    const message = 'Typst error on line 1, column 2: assertion failed: ';
    assert.equal(error, `${message}a${'😀'.repeat(4096 - 1 - 'assertion failed: '.length)}… (cut at 4,096 characters)`);
  });
});

describe('request body', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['data missing', { template: 'x' }, /Missing required field "data"/],
    ['template missing', { data: {} }, /Missing required field "template"/],
    ['data is an array', { data: [], template: 'x' }, /Field "data" must be a JSON object/],
    ['data is null', { data: null, template: 'x' }, /Field "data" must be a JSON object/],
    ['data is a string', { data: 'x', template: 'x' }, /Field "data" must be a JSON object/],
    ['template is a number', { data: {}, template: 5 }, /Field "template" must be a string/],
    ['body is an array', [], /must be a JSON object/],
    ['invalid JSON', '{"data": {', /not valid JSON/],
    ['empty body', '', /empty/],
  ];
  for (const [name, body, expected] of cases) {
    it(`400 when ${name}`, async () => {
      assert.match(await errorOf(await generate(service, body), 400), expected);
    });
  }

  it('400 for bytes that are not UTF-8', async () => {
    const bytes = Buffer.concat([Buffer.from('{"data":{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"},"template":"x"}')]);
    assert.match(await errorOf(await generate(service, new Uint8Array(bytes)), 400), /UTF-8/);
  });

  it('415 when Content-Type is not application/json, or missing', async () => {
    const body = JSON.stringify({ data: {}, template: 'x' });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
      assert.match(await errorOf(await generate(service, body, { headers: { 'content-type': type } }), 415), /application\/json/);
    }
    const res = await fetch(`${service.url}/v1/pdf/generate`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-key-0123456789' },
      body: new Uint8Array(Buffer.from(body)),
    });
    await errorOf(res, 415);
  });

  it('accepts a UTF-8 charset parameter on the JSON content type, and refuses another with 415', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/json; Charset=utf8']) {
      const res = await generate(service, { data: {}, template: 'ok' }, { headers: { 'content-type': type } });
      assert.equal(res.status, 200, type);
    }
    for (const type of ['application/json; charset=utf-16', 'application/json; charset=latin1', 'application/json; charset=']) {
      const res = await generate(service, { data: {}, template: 'ok' }, { headers: { 'content-type': type } });
      assert.equal(await errorOf(res, 415), 'Content-Type application/json must be UTF-8: a charset other than utf-8 is not taken');
    }
  });
});

describe('unknown routes', () => {
  it('answers 404 with a JSON error', async () => {
    const res = await fetch(`${service.url}/v1/nothing`);
    assert.equal(await errorOf(res, 404), 'Not found');
  });
});
