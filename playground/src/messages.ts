/**
 * What the page reads out of a JSON.parse error (the place in the data
 * editor where it stopped), and sizes as the page words them. The service's
 * answers (warnings, the place an error names, the wait after a 429) are read
 * by typst-pdf-client.
 */

export interface Place {
  line: number;
  column: number | null;
}

/**
 * Where JSON.parse stopped, from its message (`... at position 42`, which V8
 * also gives as `(line 3 column 5)`), as a line and column of `text`.
 */
export function jsonErrorPlace(message: string, text: string): Place | null {
  const lineColumn = /\(line (\d+) column (\d+)\)/.exec(message);
  if (lineColumn) return { line: Number(lineColumn[1]), column: Number(lineColumn[2]) };
  const position = /at position (\d+)/.exec(message);
  if (!position) return null;
  const before = text.slice(0, Number(position[1]));
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MB`;
}
