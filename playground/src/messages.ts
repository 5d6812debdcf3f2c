/**
 * What the page reads out of the service's answers: the place an error
 * names, and the warnings of `X-Typst-Warnings`.
 */

export interface Place {
  line: number;
  column: number | null;
}

/** `... on line 3, column 7: ...` (DESIGN.md's wording of template errors) -> { line: 3, column: 7 }. */
export function errorPlace(message: string): Place | null {
  const match = /\bon line (\d+)(?:, column (\d+))?/.exec(message);
  if (!match) return null;
  return { line: Number(match[1]), column: match[2] === undefined ? null : Number(match[2]) };
}

export interface Warning {
  line: number | null;
  column: number | null;
  message: string;
}

/**
 * `X-Typst-Warnings: 2; line 2, column 17: unknown font family ... | line 5: ...`:
 * the count, then each warning with its place (the column may be missing),
 * separated by ` | `, non-ASCII written as \uXXXX.
 */
export function parseWarnings(header: string | null): Warning[] {
  if (!header) return [];
  const text = header.replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  const count = /^(\d+); /.exec(text);
  const list = count ? text.slice(count[0].length) : text;
  return list
    .split(' | ')
    .filter((part) => part.trim() !== '')
    .map((part) => {
      const place = /^line (\d+)(?:, column (\d+))?: /.exec(part);
      if (!place) return { line: null, column: null, message: part };
      return { line: Number(place[1]), column: place[2] === undefined ? null : Number(place[2]), message: part.slice(place[0].length) };
    });
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
