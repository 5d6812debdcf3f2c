/**
 * `--help` and `--version`: answered from the settings table and the
 * version constants, before any setting is read or anything is started.
 */
import { SETTINGS, settingValues } from './config.js';
import { BINDING, BINDING_VERSION, SERVICE_NAME, SERVICE_VERSION, TYPST_VERSION } from './version.js';

function versions(): string {
  return [
    `${SERVICE_NAME} ${SERVICE_VERSION}`,
    `Node.js ${process.versions.node}`,
    `Typst ${TYPST_VERSION} (${BINDING} ${BINDING_VERSION})`,
  ].join('\n');
}

function help(): string {
  const values = settingValues();
  const rows = SETTINGS.map((s) => [s.name, s.default, values[s.name] ?? '', s.meaning]);
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

/** Prints help or versions and returns true when the arguments ask for it; the caller then exits. */
export function answerCliArgs(argv: string[]): boolean {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${help()}\n`);
    return true;
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stdout.write(`${versions()}\n`);
    return true;
  }
  return false;
}
