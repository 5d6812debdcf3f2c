/**
 * Zero data retention in memory, checked the way an attacker with a core
 * dump would look: every readable mapping of the server and of each
 * worker (/proc/PID/maps + /proc/PID/mem) is searched for the unique
 * markers of earlier requests, in UTF-8 and UTF-16. And no process of the
 * service may write a core dump at all.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { processLimit } from '../src/process-limits.js';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { encodings, scanMemory } from './support/memory-scan.js';
import { generate, startService, type Service } from './support/service.js';

/** A marker no other program holds: random, and never made in this process before the request is built. */
const marker = (kind: string) => `${kind}${randomBytes(9).toString('hex')}`;

const UNRELATED_REQUESTS = 20;

describe('request content in memory', () => {
  let service: Service;
  before(async () => {
    service = await startService({ ...NO_RATE_LIMIT, WORKERS: '2' });
  });
  after(async () => {
    await service.stop();
  });

  it(`is gone from the server, and from the workers, ${UNRELATED_REQUESTS} requests later`, async (t) => {
    const markers = {
      okData: marker('OKDATA'),
      okTemplate: marker('OKTEMPLATE'),
      syntaxData: marker('SYNTAXDATA'),
      syntaxTemplate: marker('SYNTAXTEMPLATE'),
      evalData: marker('EVALDATA'),
      evalTemplate: marker('EVALTEMPLATE'),
      asset: marker('ASSET'),
      svgAsset: marker('SVGASSET'),
      largeData: marker('LARGEDATA'),
      largeRefused: marker('LARGEREFUSED'),
    };
    // Bodies over 256 KiB are checked on a thread of their own: their memory goes there and back.
    const pad = 'p'.repeat(400_000);
    const assets = {
      'note.txt': Buffer.from(`Note ${markers.asset}`).toString('base64'),
      'img/seal.svg': Buffer.from(
        `<svg xmlns="http://www.w3.org/2000/svg" width="80" height="20"><desc>${markers.svgAsset}</desc><rect width="80" height="20"/></svg>`,
      ).toString('base64'),
    };
    // Assets travel base64-encoded: their encoded form is a marker too.
    const encoded = { assetBase64: assets['note.txt'], svgAssetBase64: assets['img/seal.svg'] };
    const requests = [
      {
        body: {
          data: { secret: markers.okData },
          template: `= Report\n#data.secret and ${markers.okTemplate}\n#read("note.txt") #image("img/seal.svg")`,
          assets,
        },
        status: 200,
      },
      { body: { data: { secret: markers.syntaxData }, template: `${markers.syntaxTemplate}\n#let x = (` }, status: 400 },
      { body: { data: { secret: markers.evalData }, template: `#data.secret\n#${markers.evalTemplate}` }, status: 400 },
      { body: { data: { secret: markers.largeData, pad }, template: '#data.secret' }, status: 200 },
      { body: { data: { secret: markers.largeRefused, pad }, template: 'x', assets: { '../x': 'AAAA' } }, status: 400 },
    ];
    for (const { body, status } of requests) {
      const res = await generate(service, body);
      const answer = Buffer.from(await res.arrayBuffer());
      assert.equal(res.status, status, answer.toString('utf8', 0, 200));
    }
    // The evaluation error quotes the template: the answer itself carries the marker.
    for (let i = 0; i < UNRELATED_REQUESTS; i++) {
      const res = await generate(service, { data: { n: i }, template: i % 2 ? 'Unrelated #data.n' : '#let y = (' });
      await res.arrayBuffer();
    }

    const all = { ...markers, ...encoded };
    const names = Object.keys(all) as (keyof typeof all)[];
    const needles = names.flatMap((name) => encodings(all[name]));
    const count = (pid: number) => {
      const found: Record<string, number> = {};
      for (const hit of scanMemory(pid, needles)) {
        const name = `${names[hit.needle >> 1]} (${hit.needle & 1 ? 'UTF-16' : 'UTF-8'}, ${hit.mapping})`;
        found[name] = (found[name] ?? 0) + 1;
      }
      return found;
    };

    const server = count(service.process.pid!);
    t.diagnostic(`server: ${JSON.stringify(server)}`);
    const workers = service.workerPids().map((pid) => ({ pid, found: count(pid) }));
    for (const { pid, found } of workers) t.diagnostic(`worker ${pid}: ${JSON.stringify(found)}`);
    assert.ok(workers.length >= 2, 'two workers and a spare');
    assert.deepEqual(server, {}, 'the server holds an earlier request');
    for (const { pid, found } of workers) assert.deepEqual(found, {}, `worker ${pid} holds an earlier request`);
  });
});

describe('core dumps', () => {
  let service: Service;
  before(async () => {
    // Started with core dumps allowed, as a careless shell or unit file would.
    service = await startService({ WORKERS: '2' }, { prefix: ['prlimit', '--core=unlimited', '--'] });
  });
  after(async () => {
    await service.stop();
  });

  it('are off for the server and every worker', () => {
    const pids = [service.process.pid!, ...service.workerPids()];
    assert.ok(pids.length >= 3, 'the server and its workers');
    for (const pid of pids) assert.deepEqual(processLimit(pid, 'Max core file size'), { soft: 0, hard: 0 }, `process ${pid}`);
  });
});
