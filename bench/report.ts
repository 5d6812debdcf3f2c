/** Formats the benchmark's figures as Markdown tables (printed, and quoted in docs/performance.md). */

export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(cells[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.slice(1).map(line)].join('\n');
}

export const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
export const ratio = (value: number) => value.toFixed(2);
export const pct = (value: number) => `${(value * 100).toFixed(0)}%`;
/** A ratio's value in each round, in order: what its median was taken of. */
export const eachRound = (values: number[]) => `rounds ${values.map(ratio).join(', ')}`;
