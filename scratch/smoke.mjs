import { startService, generate } from '../dist/test/support/service.js';
import { readFileSync, writeFileSync } from 'node:fs';
const s = await startService({ WORKERS: '1', EINVOICE_RULES: '/work/wt-einvoice/test/fixtures/einvoice/rules.xslt' });
try {
  const t = performance.now();
  const res = await generate(s, { data: JSON.parse(readFileSync('examples/einvoice.json','utf8')), template: readFileSync('examples/einvoice.typ','utf8'), typst: '0.14', pdf: { einvoice: {} } });
  console.log(res.status, performance.now() - t, res.headers.get('x-einvoice-warnings'));
  const b = Buffer.from(await res.arrayBuffer()); if (res.status===200) writeFileSync('/tmp/ei/fin.pdf', b); else console.log(b.toString());
  const min = readFileSync('test/fixtures/einvoice/minimum.xml').toString('base64');
  const r2 = await generate(s, { data: {}, template: '= Invoice', typst: '0.14', pdf: { einvoice: { xml: 'inv.xml' } }, assets: { 'inv.xml': min } });
  const b2 = Buffer.from(await r2.arrayBuffer()); console.log(r2.status); if (r2.status===200) writeFileSync('/tmp/ei/min.pdf', b2); else console.log(b2.toString());
} finally { await s.stop(); }
