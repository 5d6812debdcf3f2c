/**
 * The client installed as the README says, from the directory of a checkout
 * that was never built: `npm install <checkout>/packages/client` in a project
 * of its own runs the package's `prepare`, which compiles it (fetching
 * TypeScript for that, from npm's cache when it has it, since the checkout has
 * none installed); then `npx --no -- typst-pdf` is the installed command, and
 * both it and the module imported by its name render through a real service.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { parsePdf } from './support/pdf.js';
import { startService, TEST_KEY, type Service } from './support/service.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLIENT = join(ROOT, 'packages', 'client');
const EXAMPLES = join(ROOT, 'examples');

/** npm's own entry points, as the npm running the tests has them (else `npm` and `npx` from PATH). */
const NPM_CLI = process.env.npm_execpath?.endsWith('npm-cli.js') ? process.env.npm_execpath : undefined;

/** The environment of a user's shell: no variables of the npm run the tests are in. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_(package|lifecycle|command|execpath)/i.test(name)));
  return { ...env, ...extra };
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(tool: 'npm' | 'npx', args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const [command, prefix] = NPM_CLI
    ? [process.execPath, [join(dirname(NPM_CLI), tool === 'npm' ? 'npm-cli.js' : 'npx-cli.js')]]
    : [tool, [] as string[]];
  return new Promise((resolve) => {
    execFile(command, [...prefix, ...args], { cwd, env: userEnv(env), timeout: 180_000, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the client installed from the directory of an unbuilt checkout', () => {
  let service: Service;
  let home: string;
  let checkout: string;
  let project: string;
  before(async () => {
    service = await startService({ WORKERS: '1' });
    home = mkdtempSync(join(tmpdir(), 'typst-pdf-client-from-checkout-'));
    // The client's files as a fresh checkout has them: no dist/, no node_modules/, nothing installed above it.
    checkout = join(home, 'checkout');
    cpSync(CLIENT, join(checkout, 'packages', 'client'), {
      recursive: true,
      filter: (source) => !/^(dist|node_modules)(\/|$)/.test(relative(CLIENT, source)),
    });
    project = join(home, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-the-client', private: true, type: 'module' }));
  });
  after(async () => {
    await service?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('installs with npm install <checkout>/packages/client, which builds it', { timeout: 240_000 }, async () => {
    assert.ok(!existsSync(join(checkout, 'packages', 'client', 'dist')), 'unbuilt');
    const install = await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', join(checkout, 'packages', 'client')],
      project,
    );
    assert.equal(install.code, 0, install.stderr);
    const installed = join(project, 'node_modules', 'typst-pdf-client');
    for (const file of ['index.js', 'index.d.ts', 'cli.js']) assert.ok(existsSync(join(installed, 'dist', file)), `dist/${file}`);
    // Nothing of the build is left but dist/: TypeScript was fetched into a temporary directory.
    assert.ok(!existsSync(join(checkout, 'packages', 'client', 'node_modules')));
  });

  it('is `npx --no -- typst-pdf` in the project, and renders the letter with its asset through the service', async () => {
    const version = await run('npx', ['--no', '--', 'typst-pdf', '--version'], project);
    assert.equal(version.code, 0, version.stderr);
    const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(version.stdout.trim(), `typst-pdf ${manifest.version}`);

    const out = join(project, 'letter.pdf');
    const render = await run(
      'npx',
      [
        '--no',
        '--',
        'typst-pdf',
        'render',
        '--template',
        join(EXAMPLES, 'letter.typ'),
        '--data',
        join(EXAMPLES, 'letter.json'),
        '--asset',
        join(EXAMPLES, 'letterhead.svg'),
        '--out',
        out,
      ],
      project,
      { TYPST_PDF_URL: service.url, TYPST_PDF_API_KEY: TEST_KEY },
    );
    assert.equal(render.code, 0, render.stderr);
    const pdf = await parsePdf(readFileSync(out));
    assert.equal(pdf.pages, 1);
    assert.equal(pdf.forms, 1, 'the letterhead');
    assert.ok(pdf.text[0]!.includes('Dear Dr. Okonkwo-Vandenberghe,'));
  });

  it('is imported by its name, typst-pdf-client, and renders', async () => {
    writeFileSync(
      join(project, 'render.mjs'),
      `import { writeFileSync } from 'node:fs';\n` +
        `import { generatePdf } from 'typst-pdf-client';\n` +
        `const { pdf } = await generatePdf({ data: { who: 'the installed module' }, template: 'Rendered by #data.who' }, { url: process.argv[2], apiKey: process.argv[3] });\n` +
        `writeFileSync('module.pdf', pdf);\n`,
    );
    const result = await new Promise<Run>((resolve) =>
      execFile(process.execPath, ['render.mjs', service.url, TEST_KEY], { cwd: project, encoding: 'utf8' }, (error, stdout, stderr) =>
        resolve({ code: error ? 1 : 0, stdout, stderr }),
      ),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await parsePdf(readFileSync(join(project, 'module.pdf')))).text[0], 'Rendered by the installed module');
  });

  it('packs with npm pack into a tarball of the built files, to take elsewhere', async () => {
    const pack = await run('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], join(checkout, 'packages', 'client'));
    assert.equal(pack.code, 0, pack.stderr);
    const [{ files }] = JSON.parse(pack.stdout) as [{ files: { path: string }[] }];
    const paths = files.map((f) => f.path);
    for (const file of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/cli.js'])
      assert.ok(paths.includes(file), file);
    assert.ok(!paths.some((p) => p.startsWith('src/')), 'no sources');
  });
});
