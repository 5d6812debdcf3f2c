/**
 * The ASCII bytes the hand-written parsers of src/ look for, by name, in one
 * place (bytes/ is the ground floor: every layer may import it).
 */
export const TAB = 0x09;
export const LF = 0x0a;
export const CR = 0x0d;
export const SPACE = 0x20;
export const BANG = 0x21;
export const QUOTE = 0x22;
export const HASH = 0x23;
export const PERCENT = 0x25;
export const AMPERSAND = 0x26;
export const APOSTROPHE = 0x27;
export const OPEN_PAREN = 0x28;
export const CLOSE_PAREN = 0x29;
export const STAR = 0x2a;
export const COMMA = 0x2c;
export const DASH = 0x2d;
export const DOT = 0x2e;
export const SLASH = 0x2f;
export const COLON = 0x3a;
export const SEMICOLON = 0x3b;
export const LESS_THAN = 0x3c;
export const EQUALS = 0x3d;
export const GREATER_THAN = 0x3e;
export const QUESTION = 0x3f;
export const AT = 0x40;
export const OPEN_BRACKET = 0x5b;
export const BACKSLASH = 0x5c;
export const CLOSE_BRACKET = 0x5d;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const TILDE = 0x7e;

/** XML's white space: space, tab, line feed, carriage return. */
export const isXmlSpace = (b: number | undefined) => b === SPACE || b === TAB || b === LF || b === CR;

/** RFC 9110's `tchar` (1 for each): the bytes of a header name, a parameter name and an unquoted parameter value. */
export const TOKEN = new Uint8Array(256);
for (const b of Buffer.from("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")) TOKEN[b] = 1;
