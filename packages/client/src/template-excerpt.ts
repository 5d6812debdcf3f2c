/**
 * When the service's message names a line and column of the template
 * ("... on line 12, column 5: ..."), shows that line of the local template
 * file with a caret under the column, as compilers do.
 */
import { templatePlace } from './template-place.js';

export function templateExcerpt(message: string, template: string): string | undefined {
  const place = templatePlace(message);
  if (!place || place.column === null) return undefined;
  const line = template.split(/\r?\n/)[place.line - 1];
  if (line === undefined) return undefined;
  const gutter = `${place.line} | `;
  // Tabs are kept so that the caret lines up with the text above it.
  const padding = line.slice(0, Math.max(0, place.column - 1)).replace(/[^\t]/g, ' ');
  return `${gutter}${line}\n${' '.repeat(gutter.length - 2)}| ${padding}^`;
}
