import { NodeCompiler } from '@myriaddreamin/typst-ts-node-compiler';
import { deflateSync, crc32 } from 'node:zlib';
function chunk(type, data) { const len = Buffer.alloc(4); len.writeUInt32BE(data.length); const td = Buffer.concat([Buffer.from(type), data]); const c = Buffer.alloc(4); c.writeUInt32BE(crc32(td) >>> 0); return Buffer.concat([len, td, c]); }
function png(w, h, idat) { const ihdr = Buffer.alloc(13); ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2; return Buffer.concat([Buffer.from([137,80,78,71,13,10,26,10]), chunk('IHDR', ihdr), ...(idat ? [chunk('IDAT', idat)] : []), chunk('IEND', Buffer.alloc(0))]); }
const which = process.argv[2];
const inner = which === 'trunc' ? png(2, 2) : which === 'short' ? png(2, 2, deflateSync(Buffer.alloc(3))) : png(2, 2, deflateSync(Buffer.alloc(14)));
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><image width="100" height="100" href="data:image/png;base64,${inner.toString('base64')}"/></svg>`;
const c = NodeCompiler.create({ workspace: '/tmp/x' });
c.mapShadow('/tmp/x/x.svg', Buffer.from(svg));
const r = c.pdf({ mainFileContent: '#image("x.svg")' });
console.log(which, 'result', r ? r.length : r);
