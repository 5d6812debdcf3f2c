/**
 * The place in the template that a service message names: an error's
 * "... on line 12, column 5: ..." or a warning's leading
 * "line 2, column 17: ...". The column may be missing. An error inside a file
 * the template included ("Typst error in chapter.typ on line 3, ...") counts
 * that file's lines, not the template's, so it names no place in the template.
 */

export interface TemplatePlace {
  line: number;
  column: number | null;
}

const PLACE = /(?:^|\bon )line (\d+)(?:, column (\d+))?/;
const IN_INCLUDED_FILE = /^(?:Invalid Typst syntax|Typst error) in /;

export function templatePlace(message: string): TemplatePlace | null {
  if (IN_INCLUDED_FILE.test(message)) return null;
  const match = PLACE.exec(message);
  if (!match) return null;
  return { line: Number(match[1]), column: match[2] === undefined ? null : Number(match[2]) };
}
