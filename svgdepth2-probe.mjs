const mod = process.argv[2] === '0.14' ? 'typst-ts-node-compiler-0.14' : '@myriaddreamin/typst-ts-node-compiler';
const { NodeCompiler } = await import(mod);
const c = NodeCompiler.create({ workspace: '/tmp/x' });
const S = '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">';
const cases = {
  'g1024 empty': `${S}${'<g>'.repeat(1024)}${'</g>'.repeat(1024)}</svg>`,
  'g1023 empty': `${S}${'<g>'.repeat(1023)}${'</g>'.repeat(1023)}</svg>`,
  'g1024 selfclosing inner': `${S}${'<g>'.repeat(1023)}<g/>${'</g>'.repeat(1023)}</svg>`,
  'g1024 selfclosing inner+1': `${S}${'<g>'.repeat(1024)}<g/>${'</g>'.repeat(1024)}</svg>`,
  'g1022 + text': `${S}${'<g>'.repeat(1022)}<text>hi</text>${'</g>'.repeat(1022)}</svg>`,
  'g1023 + text': `${S}${'<g>'.repeat(1023)}<text>hi</text>${'</g>'.repeat(1023)}</svg>`,
  'g1023 + comment': `${S}${'<g>'.repeat(1023)}<!-- x -->${'</g>'.repeat(1023)}</svg>`,
  'g1024 in defs': `${S}<defs>${'<g>'.repeat(1023)}${'</g>'.repeat(1023)}</defs></svg>`,
};
for (const [name, svg] of Object.entries(cases)) {
  c.mapShadow('/tmp/x/x.svg', Buffer.from(svg));
  c.mapShadow('/tmp/x/main.typ', Buffer.from('#image("x.svg")'));
  const r = c.compile({ mainFilePath: '/tmp/x/main.typ' });
  const diags = r.takeDiagnostics();
  const list = diags ? c.fetchDiagnostics(diags) : [];
  console.log(process.argv[2], name.padEnd(28), list.length ? JSON.stringify(list[0].message ?? list[0]).slice(0, 80) : 'ok');
  c.evictCache(0);
}
