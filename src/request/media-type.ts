/**
 * The parameters of a Content-Type header (RFC 9110, 8.3.1): `; name=token`
 * or `; name="quoted string"`, the name in any case.
 */

/** A reader of the parameter `name` (an ASCII word): its first value, unquoted, or undefined when the header has none. */
export function mediaTypeParameter(name: string): (contentType: string) => string | undefined {
  const pattern = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s;"]*))`, 'i');
  return (contentType) => {
    const match = pattern.exec(contentType);
    return match === null ? undefined : (match[1]?.replace(/\\(.)/g, '$1') ?? match[2]);
  };
}
