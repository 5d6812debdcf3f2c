import SaxonJS from 'saxon-js';
import { readFileSync } from 'node:fs';
const platform = SaxonJS.getPlatform();
function addParents(n) { n.C && n.C.forEach((c) => { c.parentNode = n; addParents(c); }); }
function compile(path) {
  const xsl = platform.parseXmlFromString(readFileSync(path, 'utf8'));
  xsl._saxonBaseUri = 'file://' + path;
  const compiler = platform.resource('compiler');
  addParents(compiler);
  const options = { stylesheetParams: new SaxonJS.XdmMap(), tunnelParams: {}, functionParams: {}, isDynamicStylesheet: true, destination: 'application', initialMode: 'compile-complete', templateParams: { 'Q{}options': { noXPath: false } }, stylesheetInternal: compiler, outputProperties: {} };
  options.stylesheetParams.inSituPut(SaxonJS.XS.QName.fromParts('', '', 'staticParameters'), [new SaxonJS.XdmMap()]);
  const checked = SaxonJS.checkOptions(options);
  SaxonJS.internalTransform(compiler, xsl, checked);
  let r = checked.principalResult; if (Array.isArray(r)) r = r[0];
  const sef = SaxonJS.XPath.sefToJSON(r.firstChild, false); addParents(sef); return sef;
}
let t = performance.now();
const sef = compile('/work/wt-einvoice/test/fixtures/einvoice/rules.xslt');
console.log('compile', performance.now() - t, typeof sef);
const NS = { svrl: 'http://purl.oclc.org/dsdl/svrl' };
for (let k = 0; k < 4; k++) {
  t = performance.now();
  const xml = readFileSync('/tmp/ei/fx.xml', 'utf8').replace(/<ram:GrandTotalAmount>[^<]*/, '<ram:GrandTotalAmount>1');
  const src = platform.parseXmlFromString(xml);
  const opts = SaxonJS.checkOptions({ stylesheetInternal: sef, isDynamicStylesheet: true, destination: 'application', stylesheetParams: new SaxonJS.XdmMap(), templateParams: {}, tunnelParams: {}, functionParams: {}, outputProperties: {} });
  SaxonJS.internalTransform(sef, src, opts);
  let res = opts.principalResult; if (Array.isArray(res)) res = res[0];
  const fails = SaxonJS.XPath.evaluate('//svrl:failed-assert', res, { namespaceContext: NS, resultForm: 'array' });
  console.log(fails.map(f => f.getAttribute('id')), 'run', performance.now() - t);
}
