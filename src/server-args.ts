/**
 * The server's own command line: `--help` and `--version`, answered from the
 * settings table and the version constants before any setting is read or
 * anything is started. (The client's command line, `typst-pdf`, is
 * packages/client/src/cli.ts.)
 */
import { parseArgs } from 'node:util';
import { defaultText, SETTINGS, settingValues } from './config.js';
import { ENGINES, SERVICE_NAME, SERVICE_VERSION } from './version.js';

function versions(): string {
  return [
    `${SERVICE_NAME} ${SERVICE_VERSION}`,
    `Node.js ${process.versions.node}`,
    ...ENGINES.map((e) => `Typst ${e.typst} (${e.binding} ${e.bindingVersion})`),
  ].join('\n');
}

function help(): string {
  const values = settingValues();
  // The table's Markdown, as plain text for a terminal.
  const plain = (markdown: string) => markdown.replaceAll('`', '');
  const rows = SETTINGS.map((s) => [s.name, plain(defaultText(s)), values[s.name] ?? '', plain(s.meaning)]);
  const head = ['Variable', 'Default', 'Current', 'Meaning'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [
    versions(),
    '',
    'Usage: npm start [-- --help | --version]',
    '',
    'Renders PDFs from JSON data and Typst templates over HTTP (POST /v1/pdf/generate).',
    'Every setting comes from the environment:',
    '',
    line(head),
    ...rows.map(line),
  ].join('\n');
}

/**
 * Reads the server's command line (strictly: settings come from the
 * environment, so `--port 8080` is an error, not silently ignored). Prints
 * help or versions and returns true when asked for them, the caller then
 * exits 0; throws ServerArgsError for anything else on the line.
 */
export function answerServerArgs(argv: string[]): boolean {
  let values: { help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
    }));
  } catch (error) {
    throw new ServerArgsError(`${(error as Error).message}. Settings come from the environment: \`npm start -- --help\` lists them`);
  }
  if (values.help) {
    process.stdout.write(`${help()}\n`);
    return true;
  }
  if (values.version) {
    process.stdout.write(`${versions()}\n`);
    return true;
  }
  return false;
}

export class ServerArgsError extends Error {}
