/**
 * Where a JSON.parse error stopped in the data editor, as the place the
 * service names in a template (typst-pdf-client's TemplatePlace), so that
 * the editors mark both alike. The service's answers (warnings, the place
 * an error names, the wait after a 429) are read by typst-pdf-client.
 */
import type { TemplatePlace } from 'typst-pdf-client';

/**
 * Where JSON.parse stopped, from its message (`... at position 42`, which V8
 * also gives as `(line 3 column 5)`), as a line and column of `text`. V8
 * counts in UTF-16 units; the column returned counts characters, as Typst's
 * do (the editors mark both alike).
 */
export function jsonErrorPlace(message: string, text: string): TemplatePlace | null {
  const lines = text.split('\n');
  const place = (line: number, units: number): TemplatePlace => ({ line, column: characterColumn(lines[line - 1] ?? '', units) });
  const lineColumn = /\(line (\d+) column (\d+)\)/.exec(message);
  if (lineColumn) return place(Number(lineColumn[1]), Number(lineColumn[2]) - 1);
  const position = /at position (\d+)/.exec(message);
  if (!position) return null;
  const before = text.slice(0, Number(position[1])).split('\n');
  return place(before.length, before[before.length - 1]!.length);
}

/** The 1-based column, in characters, of the place `units` UTF-16 units into `line`. */
export function characterColumn(line: string, units: number): number {
  return [...line.slice(0, units)].length + 1;
}
