import { NodeCompiler } from 'typst-ts-node-compiler-0.14';
import { readFileSync, writeFileSync } from 'node:fs';
const c = NodeCompiler.create({ workspace: '/nonexistent-ws', fontArgs: [{ fontPaths: ['/work/wt-einvoice/dist/fonts'] }] });
const tpl = readFileSync('/work/wt-einvoice/examples/einvoice.typ');
c.mapShadow('/nonexistent-ws/data.json', readFileSync('/work/wt-einvoice/examples/einvoice.json'));
c.mapShadow('/nonexistent-ws/main.typ', Buffer.concat([Buffer.from('#let data = json("/data.json")\n'), tpl]));
const pdf = c.pdf({ mainFilePath: '/nonexistent-ws/main.typ' }, { pdfStandard: process.argv[2] ?? 'a-3b' });
writeFileSync('/tmp/ei/out.pdf', pdf);
