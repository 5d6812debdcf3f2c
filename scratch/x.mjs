const orig = WebAssembly.instantiate;
let memory;
WebAssembly.instantiate = async (...a) => { const r = await orig.apply(WebAssembly, a); const inst = r.instance ?? r; for (const v of Object.values(inst.exports)) if (v instanceof WebAssembly.Memory) memory = v; return r; };
const lx = await import('libxml2-wasm');
WebAssembly.instantiate = orig;
import { readFileSync } from 'node:fs';
const dir = '/work/wt-einvoice/schemas/factur-x/';
const fds = new Map(); let next = 1;
lx.xmlRegisterInputProvider({
  match: (f) => f.startsWith(dir) && !f.slice(dir.length).includes('/'),
  open: (f) => { try { const b = readFileSync(f); fds.set(next, { b, at: 0 }); return next++; } catch { return undefined; } },
  read: (fd, buf) => { const s = fds.get(fd); const n = Math.min(buf.byteLength, s.b.length - s.at); buf.set(s.b.subarray(s.at, s.at + n)); s.at += n; return n; },
  close: (fd) => fds.delete(fd),
});
let t = performance.now();
const sdoc = lx.XmlDocument.fromBuffer(readFileSync(dir + 'Factur-X_1.07.3_EN16931.xsd'), { url: dir + 'Factur-X_1.07.3_EN16931.xsd' });
const v = lx.XsdValidator.fromDoc(sdoc); sdoc.dispose();
console.log('load', performance.now() - t, memory.buffer.byteLength);
const snap = Buffer.from(new Uint8Array(memory.buffer).slice());
function restore(){ const m = Buffer.from(memory.buffer); const P=65536; let dirty=0; for (let a=0;a<m.length;a+=P){ const b=Math.min(a+P,m.length); if (b>snap.length){ m.fill(0, Math.max(a,snap.length), b);} if (a<snap.length && m.compare(snap, a, Math.min(b,snap.length), a, Math.min(b,snap.length))!==0){ m.set(snap.subarray(a,Math.min(b,snap.length)), a); dirty++;} } return dirty; }
const xml = readFileSync('/tmp/ei/fx.xml');
for (let k = 0; k < 5; k++) {
t = performance.now();
const doc = lx.XmlDocument.fromBuffer(xml, { url: 'factur-x.xml' });
const id = doc.get('/rsm:CrossIndustryInvoice/rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID', { rsm: 'urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100', ram: 'urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100' });
try { v.validate(doc); console.log('valid', id?.content); } catch (e) { console.log(e.message, e.details); }
doc.dispose();
const t2 = performance.now();
const dirty=restore();
console.log('validate', t2 - t, 'restore', performance.now() - t2, dirty, memory.buffer.byteLength);
}
const bad = Buffer.from(xml.toString().replace('<ram:TypeCode>380</ram:TypeCode>', '<ram:TypeCode>380</ram:TypeCode><ram:Bogus/>'));
const doc = lx.XmlDocument.fromBuffer(bad, { url: 'factur-x.xml' });
try { v.validate(doc); } catch (e) { console.log(e.message, e.details); }
doc.dispose(); new Uint8Array(memory.buffer).set(snap);
try { lx.XmlDocument.fromBuffer(Buffer.from('<a><b></a>'), { url: 'x.xml' }); } catch (e) { console.log(e.constructor.name, e.message, e.details); }
new Uint8Array(memory.buffer).set(snap);
const d2 = lx.XmlDocument.fromBuffer(xml, { url: 'factur-x.xml' }); v.validate(d2); d2.dispose(); console.log('after restore ok');
