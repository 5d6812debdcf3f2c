/**
 * The parameters of a Content-Type header (RFC 9110, 8.3.1): after the
 * media type, `; name=token` or `; name="quoted string"`, the name in any
 * case. Read by the grammar, not searched for: a `; boundary=` inside
 * another parameter's quoted value is that value, not a boundary (a
 * search once took it for one, where busboy took the real one, and the two
 * read different forms out of one body).
 */
import { TOKEN } from '../bytes/ascii.js';

/** `qdtext`: what a quoted string holds unescaped (obs-text included). */
const QDTEXT = /[\t !#-[\]-~\x80-\xff]/;

/**
 * The parameters of `contentType`, their names in lower case, their values
 * unquoted; null when the parameters break the grammar, when a name comes
 * twice (readers keep the first or the last), or when a quoted value
 * escapes anything but `"` and `\` (readers keep the backslash or drop it).
 */
export function mediaTypeParameters(contentType: string): Map<string, string> | null {
  const parameters = new Map<string, string>();
  const start = contentType.indexOf(';');
  if (start < 0) return parameters;
  let i = start;
  const blanks = () => {
    while (contentType[i] === ' ' || contentType[i] === '\t') i++;
  };
  const token = () => {
    const from = i;
    while (TOKEN[contentType.charCodeAt(i)] === 1) i++;
    return contentType.slice(from, i);
  };
  for (;;) {
    blanks();
    if (i === contentType.length) return parameters;
    if (contentType[i] !== ';') return null;
    i++;
    blanks();
    // An empty parameter (`;;`, or a `;` at the end) is allowed by the grammar, and says nothing.
    if (i === contentType.length || contentType[i] === ';') continue;
    const name = token().toLowerCase();
    if (name === '' || contentType[i] !== '=') return null;
    i++;
    let value: string;
    if (contentType[i] === '"') {
      i++;
      value = '';
      for (;;) {
        const c = contentType[i];
        if (c === undefined) return null;
        i++;
        if (c === '"') break;
        if (c === '\\') {
          const escaped = contentType[i++];
          if (escaped !== '"' && escaped !== '\\') return null;
          value += escaped;
        } else if (QDTEXT.test(c)) value += c;
        else return null;
      }
    } else {
      // An empty value breaks the grammar too, but says plainly what it is: no charset, no boundary.
      value = token();
    }
    if (parameters.has(name)) return null;
    parameters.set(name, value);
  }
}
