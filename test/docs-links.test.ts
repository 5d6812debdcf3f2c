/**
 * The documentation holds together: every relative link in README.md, docs/ and the client's
 * README leads to a file of the repository, and every `#anchor` to a heading of the Markdown file
 * it names; README stays a newcomer's page, under 300 lines; and no file of the repository cites
 * a document that is not in it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'packages/client/README.md',
];

/** The text outside fenced code blocks, the blocks' lines left empty so that line numbers stay. */
function prose(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence === undefined) {
        if (marker === undefined) return line;
        fence = marker;
      } else if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return '';
    })
    .join('\n');
}

/**
 * The anchors GitHub gives a file's headings: the heading's text without its markup, lower-cased,
 * with every character but letters, marks, digits, `_`, `-` and spaces dropped and each space
 * made a `-`; a repeated slug gets `-1`, `-2`, ... (the rules of github-slugger, which GitHub uses;
 * a few lines, not worth a dependency).
 */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const line of prose(markdown).split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    slugs.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return slugs;
}

/** Every link target in a Markdown file's prose (inline links and images), with its line. */
function links(markdown: string): { target: string; line: number }[] {
  // Code spans are blanked to spaces of their length, so that positions (and lines) stay.
  const text = prose(markdown).replace(/(`+)[^`]*?\1/g, (span) => span.replace(/[^\n]/g, ' '));
  const found: { target: string; line: number }[] = [];
  for (const match of text.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1] as string;
    found.push({ target, line: text.slice(0, match.index).split('\n').length });
  }
  return found;
}

/** What is wrong with one relative link of `file`, or undefined when it resolves. */
function brokenLink(file: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#', 2);
  const to = path === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), decodeURIComponent(path));
  const inside = relative(ROOT, to);
  if (inside.startsWith(`..${sep}`) || inside === '..') return 'leads out of the repository';
  if (!existsSync(to)) return `${inside} does not exist`;
  if (anchor === undefined) return undefined;
  if (!to.endsWith('.md')) return `an anchor into ${inside}, which is not Markdown`;
  if (!anchors(readFileSync(to, 'utf8')).has(decodeURIComponent(anchor))) return `${inside} has no heading #${anchor}`;
  return undefined;
}

describe('the documentation', () => {
  it('reads GitHub heading anchors as GitHub makes them', () => {
    const slugs = anchors('# PDF output (Typst 0.14)\n## E-invoices (Factur-X / ZUGFeRD)\n### Using `data`\n## Errors\n## Errors\n');
    assert.deepEqual([...slugs], ['pdf-output-typst-014', 'e-invoices-factur-x--zugferd', 'using-data', 'errors', 'errors-1']);
    assert.deepEqual(
      links('[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n[d\ne](#f) <https://example.org>').map((link) => link.target),
      ['x.md', '#f'],
    );
  });

  it('has every relative link resolve to a file of the repository, and every anchor to a heading', () => {
    const broken: string[] = [];
    for (const file of DOCUMENTS) {
      for (const { target, line } of links(readFileSync(join(ROOT, file), 'utf8'))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like: not the repository's
        const problem = brokenLink(file, target);
        if (problem !== undefined) broken.push(`${file}:${line}: (${target}) ${problem}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('keeps README under 300 lines', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length - 1;
    assert.ok(lines < 300, `README.md has ${lines} lines; move the detail to a page in docs/`);
  });

  it('cites no document that is not in the repository', () => {
    // The names are put together here so that this file does not mention them itself.
    const absent = ['DESIGN', 'SPEC'].map((name) => `${name}.md`);
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: ROOT })
      .toString()
      .split('\0')
      .filter((file) => file !== '' && existsSync(join(ROOT, file)));
    assert.ok(files.includes('README.md'), 'git lists the repository files');
    const citing = files.flatMap((file) => {
      const bytes = readFileSync(join(ROOT, file));
      return absent.filter((name) => bytes.includes(name)).map((name) => `${file} cites ${name}`);
    });
    assert.deepEqual(citing, []);
  });
});
