const mod = process.argv[2] === '0.14' ? 'typst-ts-node-compiler-0.14' : '@myriaddreamin/typst-ts-node-compiler';
const { NodeCompiler } = await import(mod);
const c = NodeCompiler.create({ workspace: '/tmp/x' });
for (const d of process.argv.slice(3).map(Number)) {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">${'<g>'.repeat(d)}<rect width="10" height="10"/>${'</g>'.repeat(d)}</svg>`;
  c.mapShadow('/tmp/x/x.svg', Buffer.from(svg));
  c.mapShadow('/tmp/x/main.typ', Buffer.from('#image("x.svg")'));
  const r = c.compile({ mainFilePath: '/tmp/x/main.typ' });
  const diags = r.takeDiagnostics();
  const list = diags ? c.fetchDiagnostics(diags) : [];
  console.log(process.argv[2], d, list.length ? JSON.stringify(list[0].message ?? list[0]).slice(0, 120) : 'ok');
  c.evictCache(0);
}
