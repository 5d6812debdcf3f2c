/**
 * Files sent with the request (`assets`) against a real server: every
 * image format lands in the PDF at its pixel size, files are read, parsed
 * and included, each request sees only its own, and bad names and values
 * are refused naming the asset.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { NO_RATE_LIMIT, send } from './support/hostile.js';
import { parsePdf } from './support/pdf.js';
import { solidPng } from './support/png.js';
import { generate, startService, type Service } from './support/service.js';

const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/${name}`, import.meta.url));
const b64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');

let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1', QUEUE_LIMIT: '16' });
});
after(async () => {
  await service.stop();
});

describe('images', () => {
  const cases = [
    { name: 'PNG', asset: 'logo.png', bytes: solidPng(40, 30, [200, 30, 30]), size: '40x30' },
    { name: 'JPEG', asset: 'photos/photo.jpg', bytes: fixture('photo.jpg'), size: '37x23' },
    { name: 'GIF', asset: 'seal.gif', bytes: fixture('seal.gif'), size: '29x17' },
  ];
  for (const c of cases) {
    it(`${c.name} renders as an image of its pixel size`, async () => {
      const answer = await send(service, { data: {}, template: `#image("${c.asset}", width: 3cm)`, assets: { [c.asset]: b64(c.bytes) } });
      assert.equal(answer.status, 200, answer.error);
      assert.deepEqual((await parsePdf(answer.bytes!)).images, [c.size]);
    });
  }

  it('SVG renders, by absolute path, from a data: URL, and draws another asset it links to', async () => {
    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="navy"/><image href="../seal.gif" x="10" y="10" width="29" height="17"/></svg>';
    const answer = await send(service, {
      data: {},
      template: '#image("/img/seal.svg", width: 3cm)',
      assets: { 'img/seal.svg': `data:image/svg+xml;base64,${b64(svg)}`, 'seal.gif': b64(fixture('seal.gif')) },
    });
    assert.equal(answer.status, 200, answer.error);
    assert.deepEqual((await parsePdf(answer.bytes!)).images, ['29x17']);
  });

  it('an image Typst cannot decode is a 400 at the line that uses it', async () => {
    const answer = await send(service, {
      data: {},
      template: 'Logo:\n#image("broken.png")',
      assets: { 'broken.png': b64('not a png at all') },
    });
    assert.equal(answer.status, 400);
    assert.match(answer.error ?? '', /^Typst error on line 2, column 2: failed to decode image/);
  });
});

describe('files', () => {
  it('are read, parsed as CSV and JSON, and included, by relative and absolute paths', async () => {
    const assets = {
      'notes.txt': b64('Plain notes'),
      'data/rates.csv': b64('currency,rate\nEUR,1.08\nJPY,0.0067\n'),
      'extra.json': b64(JSON.stringify({ greeting: 'Grüß Gott' })),
      'parts/footer.typ': b64('Footer text'),
      'parts/lib.typ': b64('#let signed(data) = [Signed by #data.name]'),
    };
    const template = [
      '#read("notes.txt")',
      '',
      '#csv("/data/rates.csv").slice(1).map(r => r.join("=")).join(", ")',
      '',
      '#json("extra.json").greeting',
      '',
      '#include "parts/footer.typ"',
      '',
      '#import "parts/lib.typ": signed',
      '#signed(data)',
    ].join('\n');
    const answer = await send(service, { data: { name: 'Ada' }, template, assets });
    assert.equal(answer.status, 200, answer.error);
    const text = (await parsePdf(answer.bytes!)).text.join(' ');
    for (const expected of ['Plain notes', 'EUR=1.08, JPY=0.0067', 'Grüß Gott', 'Footer text', 'Signed by Ada'])
      assert.ok(text.includes(expected), `${expected} in ${text}`);
  });

  it('an included file sees `data` only when the template passes it, and its errors name it', async () => {
    const answer = await send(service, {
      data: { name: 'Ada' },
      template: '#include "part.typ"',
      assets: { 'part.typ': b64('Hello\n#data.name') },
    });
    assert.equal(answer.error, 'Typst error in part.typ on line 2, column 2: unknown variable: data');
  });

  it('names a file that is not there as the template wrote it, with a hint', async () => {
    const missing = await send(service, { data: {}, template: 'Intro\n#image("logo.png")' });
    assert.equal(
      missing.error,
      'Typst error on line 2, column 8: file not found: logo.png; hint: a template reads only the files sent in the request\'s "assets" field, e.g. "assets": {"logo.png": "<base64>"}',
    );
    const url = await send(service, { data: {}, template: '#image("https://example.com/logo.png")' });
    assert.match(
      url.error ?? '',
      /^Typst error on line 1, column 8: file not found: https:\/\/example\.com\/logo\.png; hint: the service fetches nothing from the network/,
    );
    for (const error of [missing.error, url.error]) assert.ok(!/searched at|virtual-root/.test(error ?? ''));
  });

  it("has no file of the service's own under an asset's name", async () => {
    const answer = await send(service, {
      data: { a: 1 },
      template: '#read("request.json") #read("/request.json")',
      assets: { 'request.json': b64('mine') },
    });
    assert.equal(answer.status, 200, answer.error);
    assert.equal((await parsePdf(answer.bytes!)).text[0], 'mine mine');
  });
});

describe('isolation', () => {
  it('a request never sees the assets of another, one after the other or at the same time on one worker', async () => {
    const reader = { data: {}, template: '#read("secret.txt")' };
    const owner = { data: {}, template: '#read("secret.txt")', assets: { 'secret.txt': b64('only for the owner') } };
    const first = await send(service, owner);
    assert.equal((await parsePdf(first.bytes!)).text[0], 'only for the owner');
    assert.match((await send(service, reader)).error ?? '', /file not found: secret\.txt/);
    const together = await Promise.all(Array.from({ length: 6 }, (_, i) => send(service, i % 2 ? reader : owner)));
    for (const [i, answer] of together.entries()) {
      if (i % 2) assert.match(answer.error ?? '', /file not found: secret\.txt/);
      else assert.equal((await parsePdf(answer.bytes!)).text[0], 'only for the owner');
    }
  });
});

describe('bad assets', () => {
  const refused: [string, unknown, RegExp][] = [
    ['a parent segment', { '../x.png': 'AAAA' }, /^Asset "\.\.\/x\.png": name must not have a "\." or "\.\." path segment$/],
    ['an absolute name', { '/abs.png': 'AAAA' }, /^Asset "\/abs\.png": name must be a relative path/],
    ['an empty segment', { 'a//b.png': 'AAAA' }, /^Asset "a\/\/b\.png": name has an empty path segment$/],
    ['a long name', { [`${'n'.repeat(256)}.png`]: 'AAAA' }, /^Asset "n{100}\.\.\.": name is longer than 255 bytes of UTF-8$/],
    ['a value that is not a string', { 'logo.png': 5 }, /^Asset "logo\.png": value must be a string/],
    ['invalid base64', { 'logo.png': 'iVBOR*w0KGgo=' }, /^Asset "logo\.png": not valid base64 \(character 6 of the value\)$/],
    [
      'a data: URL that is not base64',
      { 'logo.svg': 'data:image/svg+xml,<svg/>' },
      /^Asset "logo\.svg": only base64 data: URLs are accepted/,
    ],
    ['assets not an object', ['logo.png'], /^Field "assets" must be a JSON object/],
    [
      'too many assets',
      Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}.txt`, ''])),
      /^Field "assets" has more than 1000 entries$/,
    ],
  ];
  for (const [name, assets, error] of refused) {
    it(`400 for ${name}`, async () => {
      const answer = await send(service, { data: {}, template: 'x', assets });
      assert.equal(answer.status, 400);
      assert.match(answer.error ?? '', error);
    });
  }

  it('assets count toward the 10 MB', async () => {
    const res = await generate(service, { data: {}, template: 'x', assets: { 'big.bin': 'A'.repeat(10 * 1024 * 1024) } });
    assert.equal(res.status, 413);
  });
});
