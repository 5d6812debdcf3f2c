/**
 * Typst syntax highlighting for CodeMirror 6, written here as a small
 * StreamLanguage tokenizer.
 *
 * Why hand-written: the one CodeMirror 6 package for Typst on npm
 * (codemirror-lang-typst 0.4.0) is marked experimental, has a single
 * release and no usage documentation, and parses through a 320 KB
 * WebAssembly build of the newest typst-syntax crate, loaded as an ES
 * module import of a .wasm file. That needs a bundler plugin, would add
 * 'wasm-unsafe-eval' to the page's Content-Security-Policy, and parses a
 * newer Typst than the 0.11.1 the service compiles. Highlighting only has
 * to be helpful, not exact: errors come from the service's real compiler.
 *
 * Typst has three modes, and this follows them with a stack of frames:
 * - markup (the document, and `[...]` content blocks): headings, lists,
 *   *strong*, _emphasis_, `raw`, <labels>, @references, escapes, comments;
 * - code, entered by `#`: after `#let`, `#set`, `#show`, `#if`, ... until
 *   the end of the line (or `;`) with brackets open on later lines; after
 *   `#name` as long as `.field`, `(args)` and `[content]` follow; and
 *   inside `#(...)` and `#{...}`;
 * - math, between `$` signs.
 */
import { StreamLanguage, type StringStream } from '@codemirror/language';
import { tags as t } from '@lezer/highlight';

type Mode = 'markup' | 'code' | 'math';

interface Frame {
  mode: Mode;
  /** The character that ends this frame (a closing bracket or `$`), or null. */
  close: string | null;
  /** `line`: a statement ending at the end of its line; `expr`: `#name` and what chains onto it. */
  kind?: 'line' | 'expr';
}

interface TypstState {
  stack: Frame[];
  /** Depth of nested block comments being read. */
  comment: number;
  /** Length of the backtick fence of a raw block being read (0: none). */
  fence: number;
  /** After `.` in a `#name` chain, a field name is next. */
  field: boolean;
  strong: boolean;
  emphasis: boolean;
  heading: boolean;
}

const STATEMENTS = new Set([
  'let',
  'set',
  'show',
  'if',
  'else',
  'for',
  'while',
  'import',
  'include',
  'return',
  'context',
  'break',
  'continue',
]);
const KEYWORDS = new Set([...STATEMENTS, 'in', 'not', 'and', 'or', 'as']);
const ATOMS = new Set(['none', 'auto', 'true', 'false']);
const IDENT = /^[\p{L}_][\p{L}\p{N}_-]*/u;
const IDENT_START = /[\p{L}_]/u;
const NUMBER = /^(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?(?:pt|mm|cm|in|em|fr|deg|rad|%)?/;
const OPERATOR = /^(?:=>|==|!=|<=|>=|\+=|-=|\*=|\/=|\.\.|[-+*/=<>!:,.])/;

function top(state: TypstState): Frame {
  return state.stack[state.stack.length - 1]!;
}

function push(state: TypstState, frame: Frame): void {
  state.stack.push(frame);
}

/** Pops frames down to (and including) the one that `close` ends, if any does. */
function closeFrame(state: TypstState, close: string): boolean {
  for (let i = state.stack.length - 1; i > 0; i--) {
    if (state.stack[i]!.close === close) {
      state.stack.length = i;
      return true;
    }
  }
  return false;
}

function blockComment(stream: StringStream, state: TypstState): string {
  while (!stream.eol()) {
    if (stream.match('/*')) state.comment++;
    else if (stream.match('*/')) {
      state.comment--;
      if (state.comment === 0) break;
    } else stream.next();
  }
  return 'comment';
}

function comment(stream: StringStream, state: TypstState): string | null {
  if (stream.match('//')) {
    stream.skipToEnd();
    return 'comment';
  }
  if (stream.match('/*')) {
    state.comment = 1;
    return blockComment(stream, state);
  }
  return null;
}

function string(stream: StringStream): string {
  stream.next(); // the opening quote
  let escaped = false;
  while (!stream.eol()) {
    const ch = stream.next();
    if (ch === '"' && !escaped) break;
    escaped = ch === '\\' && !escaped;
  }
  return 'string';
}

function raw(stream: StringStream, state: TypstState): string {
  const fence = stream.match(/^`+/) as RegExpMatchArray;
  const length = fence[0].length;
  if (length >= 3) {
    state.fence = length;
    return rawBlock(stream, state);
  }
  if (length === 1) stream.match(/^[^`]*`?/);
  return 'monospace';
}

function rawBlock(stream: StringStream, state: TypstState): string {
  const end = '`'.repeat(state.fence);
  const at = stream.string.indexOf(end, stream.pos);
  if (at === -1) stream.skipToEnd();
  else {
    stream.pos = at + end.length;
    state.fence = 0;
  }
  return 'monospace';
}

/** `#` in markup or math: the start of an embedded code expression or statement. */
function hash(stream: StringStream, state: TypstState): string {
  const ident = stream.match(IDENT) as RegExpMatchArray | null;
  if (ident) {
    const word = ident[0];
    if (STATEMENTS.has(word)) {
      push(state, { mode: 'code', close: null, kind: 'line' });
      return 'keyword';
    }
    push(state, { mode: 'code', close: null, kind: 'expr' });
    state.field = false;
    if (ATOMS.has(word)) return 'atom';
    return /^[([]/.test(stream.peek() ?? '') ? 'function' : 'variable';
  }
  const open = stream.peek();
  if (open === '(' || open === '{') {
    stream.next();
    push(state, { mode: 'code', close: open === '(' ? ')' : '}' });
    return 'bracket';
  }
  if (open === '[') {
    stream.next();
    push(state, { mode: 'markup', close: ']' });
    return 'bracket';
  }
  if (open === '"') return string(stream);
  return 'meta';
}

function styled(state: TypstState, base: string | null): string | null {
  const names = [base, state.heading ? 'heading' : null, state.strong ? 'strong' : null, state.emphasis ? 'emphasis' : null].filter(
    Boolean,
  );
  return names.length > 0 ? names.join(' ') : null;
}

function markup(stream: StringStream, state: TypstState, frame: Frame): string | null {
  if (stream.sol()) {
    state.heading = false;
    if (stream.match(/^\s*=+(?=\s|$)/)) {
      state.heading = true;
      return 'heading';
    }
    if (stream.match(/^\s*(?:[-+]|\d+\.)(?=\s)/) || stream.match(/^\s*\/(?=\s[^:]*:)/)) return 'list';
  }
  const found = comment(stream, state);
  if (found) return found;
  const ch = stream.peek()!;
  if (ch === '\\') {
    stream.next();
    if (!stream.eol()) stream.match(/^u\{[0-9a-fA-F]+\}/) || stream.next();
    return 'escape';
  }
  if (ch === '#') {
    stream.next();
    return hash(stream, state);
  }
  if (ch === '$') {
    stream.next();
    push(state, { mode: 'math', close: '$' });
    return 'math';
  }
  if (ch === '`') return raw(stream, state);
  if (ch === '*') {
    stream.next();
    state.strong = !state.strong;
    return 'strong';
  }
  if (ch === '_') {
    stream.next();
    state.emphasis = !state.emphasis;
    return 'emphasis';
  }
  if (ch === ']' && frame.close === ']') {
    stream.next();
    state.stack.pop();
    return 'bracket';
  }
  if (stream.match(/^<[\p{L}\p{N}_\-.:]+>/u) || stream.match(/^@[\p{L}\p{N}_\-.:]*[\p{L}\p{N}_]/u)) return 'labelName';
  if (stream.match(/^(?:---|--|~|\.\.\.)/)) return 'special';
  if (!stream.match(/^[^\\#$`*_<@\]/\-~.]+/)) stream.next();
  return styled(state, null);
}

/**
 * Inside `#name...`: reads what chains onto it. Returns undefined when the
 * expression has ended (the frame is popped and the caller reads on in the frame below).
 */
function chain(stream: StringStream, state: TypstState): string | null | undefined {
  if (state.field) {
    state.field = false;
    const ident = stream.match(IDENT) as RegExpMatchArray | null;
    if (ident) return /^[([]/.test(stream.peek() ?? '') ? 'function' : 'property';
  }
  const next = stream.peek();
  if (next === '.' && IDENT_START.test(stream.string.charAt(stream.pos + 1))) {
    stream.next();
    state.field = true;
    return 'operator';
  }
  if (next === '(') {
    stream.next();
    push(state, { mode: 'code', close: ')' });
    return 'bracket';
  }
  if (next === '[') {
    stream.next();
    push(state, { mode: 'markup', close: ']' });
    return 'bracket';
  }
  state.stack.pop();
  return undefined;
}

function code(stream: StringStream, state: TypstState, frame: Frame): string | null {
  if (stream.eatSpace()) return null;
  const found = comment(stream, state);
  if (found) return found;
  const ch = stream.peek()!;
  if (ch === '"') return string(stream);
  if (ch === '$') {
    stream.next();
    push(state, { mode: 'math', close: '$' });
    return 'math';
  }
  if (ch === '(' || ch === '{') {
    stream.next();
    push(state, { mode: 'code', close: ch === '(' ? ')' : '}' });
    return 'bracket';
  }
  if (ch === '[') {
    stream.next();
    push(state, { mode: 'markup', close: ']' });
    return 'bracket';
  }
  if (ch === ')' || ch === '}' || ch === ']') {
    stream.next();
    closeFrame(state, ch);
    return 'bracket';
  }
  if (ch === ';') {
    stream.next();
    if (frame.kind === 'line') state.stack.pop();
    return 'operator';
  }
  if (stream.match(NUMBER)) return 'number';
  const ident = stream.match(IDENT) as RegExpMatchArray | null;
  if (ident) {
    const word = ident[0];
    if (KEYWORDS.has(word)) return 'keyword';
    if (ATOMS.has(word)) return 'atom';
    const before = stream.string.charAt(stream.start - 1);
    if (/^[([]/.test(stream.peek() ?? '')) return 'function';
    return before === '.' ? 'property' : 'variable';
  }
  if (stream.match(OPERATOR)) return 'operator';
  if (stream.match(/^<[\p{L}\p{N}_\-.:]+>/u)) return 'labelName';
  stream.next();
  return null;
}

function math(stream: StringStream, state: TypstState): string | null {
  const found = comment(stream, state);
  if (found) return found;
  const ch = stream.peek()!;
  if (ch === '$') {
    stream.next();
    closeFrame(state, '$');
    return 'math';
  }
  if (ch === '\\') {
    stream.next();
    stream.next();
    return 'escape';
  }
  if (ch === '#') {
    stream.next();
    return hash(stream, state);
  }
  if (ch === '"') return string(stream);
  if (!stream.match(/^[^$\\#"/]+/)) stream.next();
  return 'math';
}

export const typstLanguage = StreamLanguage.define<TypstState>({
  name: 'typst',
  startState: () => ({
    stack: [{ mode: 'markup', close: null }],
    comment: 0,
    fence: 0,
    field: false,
    strong: false,
    emphasis: false,
    heading: false,
  }),
  copyState: (state) => ({ ...state, stack: state.stack.map((frame) => ({ ...frame })) }),
  token(stream, state) {
    if (state.comment > 0) return blockComment(stream, state);
    if (state.fence > 0) return rawBlock(stream, state);
    // A statement (`#let x = 1`) ends with its line, unless a bracket it opened is still open.
    if (stream.sol() && top(state).kind === 'line') state.stack.pop();
    for (;;) {
      const frame = top(state);
      if (frame.kind === 'expr') {
        const style = chain(stream, state);
        if (style === undefined) continue;
        return style;
      }
      if (frame.mode === 'markup') return markup(stream, state, frame);
      if (frame.mode === 'math') return math(stream, state);
      return code(stream, state, frame);
    }
  },
  blankLine(state) {
    // A blank line ends a paragraph, and with it unclosed *strong* or _emphasis_.
    state.strong = false;
    state.emphasis = false;
    while (top(state).kind !== undefined) state.stack.pop();
  },
  languageData: { commentTokens: { line: '//', block: { open: '/*', close: '*/' } } },
  tokenTable: {
    comment: t.comment,
    string: t.string,
    number: t.number,
    keyword: t.keyword,
    atom: t.atom,
    function: t.function(t.variableName),
    variable: t.variableName,
    property: t.propertyName,
    operator: t.operator,
    bracket: t.bracket,
    heading: t.heading,
    strong: t.strong,
    emphasis: t.emphasis,
    list: t.list,
    labelName: t.labelName,
    math: t.special(t.string),
    escape: t.escape,
    monospace: t.monospace,
    special: t.contentSeparator,
    meta: t.meta,
  },
});
