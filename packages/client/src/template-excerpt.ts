/**
 * When the service's message names a line and column of the template
 * ("... on line 12, column 5: ..."), shows that line of the local template
 * file with a caret under the column, as compilers do.
 */

const POSITION = /(?:^|on )line (\d+), column (\d+)/;

export function templateExcerpt(message: string, template: string): string | undefined {
  const match = POSITION.exec(message);
  if (!match) return undefined;
  const lineNumber = Number(match[1]);
  const column = Number(match[2]);
  const line = template.split(/\r?\n/)[lineNumber - 1];
  if (line === undefined) return undefined;
  const gutter = `${lineNumber} | `;
  // Tabs are kept so that the caret lines up with the text above it.
  const padding = line.slice(0, Math.max(0, column - 1)).replace(/[^\t]/g, ' ');
  return `${gutter}${line}\n${' '.repeat(gutter.length - 2)}| ${padding}^`;
}
