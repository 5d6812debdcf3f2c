/**
 * The two CodeMirror editors (template and data) and the marks that show
 * where the service or the JSON parser found a problem.
 */
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { json } from '@codemirror/lang-json';
import { bracketMatching, ensureSyntaxTree, HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { Compartment, EditorSelection, EditorState, StateEffect, StateField, Transaction, type Extension } from '@codemirror/state';
import {
  Decoration,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
  type DecorationSet,
} from '@codemirror/view';
import { tags as t } from '@lezer/highlight';
import { characterColumn } from './json-error-place.js';
import { typstLanguage } from './typst-language.js';

export interface Problem {
  severity: 'error' | 'warning';
  /** 1-based line. */
  line: number;
  /** 1-based column, or null when only the line is known. */
  column: number | null;
  message: string;
}

const setProblems = StateEffect.define<Problem[]>();

/**
 * Typst counts columns in characters, the editor in UTF-16 units: the
 * offset in `text` of its `column`th character (1-based), or its end.
 */
function offsetOf(text: string, column: number): number {
  let offset = 0;
  for (let i = 1; i < column && offset < text.length; i++) offset += text.codePointAt(offset)! > 0xffff ? 2 : 1;
  return offset;
}

function problemDecorations(state: EditorState, problems: Problem[]): DecorationSet {
  const ranges = [];
  for (const problem of problems) {
    if (problem.line < 1 || problem.line > state.doc.lines) continue;
    const line = state.doc.line(problem.line);
    ranges.push(
      Decoration.line({
        class: `cm-problem-line cm-${problem.severity}-line`,
        attributes: { 'data-problem-line': String(problem.line), title: problem.message },
      }).range(line.from),
    );
    if (problem.column !== null && line.length > 0) {
      // A column past the end marks the line's last character.
      const chars = [...line.text];
      const at = Math.min(Math.max(problem.column, 1), chars.length) - 1;
      const from = line.from + offsetOf(line.text, at + 1);
      ranges.push(Decoration.mark({ class: `cm-problem-mark cm-${problem.severity}-mark` }).range(from, from + chars[at]!.length));
    }
  }
  return Decoration.set(ranges, true);
}

/** The problems shown in an editor; they move with the text until the next answer replaces them. */
const problemField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(value, tr) {
    let next = value.map(tr.changes);
    for (const effect of tr.effects) if (effect.is(setProblems)) next = problemDecorations(tr.state, effect.value);
    return next;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/** Colours chosen for at least 4.5:1 contrast on the editor's white background. */
const highlightStyle = HighlightStyle.define([
  { tag: t.comment, color: '#5a6270', fontStyle: 'italic' },
  { tag: t.keyword, color: '#7a1fa2', fontWeight: '600' },
  { tag: [t.atom, t.bool, t.null], color: '#8a3c00' },
  { tag: t.number, color: '#0b6e4f' },
  { tag: t.string, color: '#a31515' },
  { tag: t.function(t.variableName), color: '#1a56a8' },
  { tag: t.propertyName, color: '#2a5d84' },
  { tag: t.heading, color: '#7d2a00', fontWeight: '700' },
  { tag: t.strong, fontWeight: '700' },
  { tag: t.emphasis, fontStyle: 'italic' },
  { tag: t.list, color: '#7a1fa2' },
  { tag: t.labelName, color: '#006476' },
  { tag: t.special(t.string), color: '#6b4e00' },
  { tag: t.escape, color: '#9a3800' },
  { tag: t.monospace, color: '#3c3c3c', fontFamily: 'inherit' },
  { tag: t.meta, color: '#5a6270' },
  { tag: t.invalid, color: '#b00020' },
]);

/** Base styles that must beat CodeMirror's own (which it injects as a constructed style sheet). */
const theme = EditorView.theme({
  '&': { height: '100%', fontSize: '13.5px', backgroundColor: '#fff' },
  '.cm-scroller': { fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace', lineHeight: '1.5' },
  '.cm-gutters': { backgroundColor: '#f3f4f6', color: '#4b5563', borderRight: '1px solid #d1d5db' },
  '.cm-activeLineGutter': { backgroundColor: '#e5e7eb', color: '#111827' },
  '.cm-activeLine': { backgroundColor: '#f5f7fb' },
  '&.cm-focused': { outline: '2px solid #1a56a8', outlineOffset: '-2px' },
  '.cm-error-line': { backgroundColor: '#fdecec' },
  '.cm-warning-line': { backgroundColor: '#fff7e0' },
  '.cm-error-mark': { textDecoration: 'underline wavy #b00020', textDecorationSkipInk: 'none', backgroundColor: '#f7c5c5' },
  '.cm-warning-mark': { textDecoration: 'underline wavy #8a5a00' },
});

export interface EditorOptions {
  parent: HTMLElement;
  label: string;
  doc: string;
  onChange: () => void;
  language: 'typst' | 'json';
  /** Id of the element that describes problems in this editor. */
  describedBy?: string;
}

export class CodeEditor {
  readonly view: EditorView;
  /** Holds the undo history, so that loading an example can start it afresh. */
  private readonly historySlot = new Compartment();

  constructor(options: EditorOptions) {
    const extensions: Extension[] = [
      lineNumbers(),
      highlightActiveLineGutter(),
      highlightActiveLine(),
      this.historySlot.of(history()),
      drawSelection(),
      indentOnInput(),
      bracketMatching(),
      // Tab is left to move the focus, so the page can be used by keyboard alone (indent: Ctrl-] / Ctrl-[).
      keymap.of([...defaultKeymap, ...historyKeymap]),
      options.language === 'typst' ? typstLanguage : json(),
      syntaxHighlighting(highlightStyle),
      theme,
      problemField,
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({
        'aria-label': options.label,
        // Focusable by Tab anyway (contenteditable); said explicitly so checkers see the scrolled area has keyboard access.
        tabindex: '0',
        ...(options.describedBy ? { 'aria-describedby': options.describedBy } : {}),
      }),
      EditorView.domEventHandlers({
        beforeinput(event, view) {
          // Typing over a selection that spans highlighted text lets Chrome's own editing try to keep the
          // deleted text's look with inline style attributes, which the page's Content-Security-Policy
          // refuses (and the browser logs as an error). CodeMirror makes that change itself instead.
          if (event.inputType !== 'insertText' || event.data === null || view.composing) return false;
          if (view.state.selection.ranges.every((range) => range.empty)) return false;
          event.preventDefault();
          view.dispatch(view.state.replaceSelection(event.data), { userEvent: 'input.type', scrollIntoView: true });
          return true;
        },
      }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) options.onChange();
      }),
    ];
    this.view = new EditorView({ parent: options.parent, state: EditorState.create({ doc: options.doc, extensions }) });
  }

  get text(): string {
    return this.view.state.doc.toString();
  }

  /**
   * Replaces the whole text (loading an example); problems are cleared. The
   * load is no step of the undo history, and the history before it is
   * dropped (taking the history out and putting it back starts it afresh):
   * undo never returns to an empty editor, or to another example's edits.
   */
  setText(text: string): void {
    this.view.dispatch({
      changes: { from: 0, to: this.view.state.doc.length, insert: text },
      selection: EditorSelection.cursor(0),
      effects: [setProblems.of([]), this.historySlot.reconfigure([])],
      annotations: Transaction.addToHistory.of(false),
      scrollIntoView: true,
    });
    this.view.dispatch({ effects: this.historySlot.reconfigure(history()) });
  }

  setProblems(problems: Problem[]): void {
    this.view.dispatch({ effects: setProblems.of(problems) });
  }

  /**
   * Where the editor's own parser (for JSON, Lezer's grammar) first found an error,
   * as a 1-based line and column. Used for the data editor, because V8's JSON.parse
   * messages no longer always say where they stopped.
   */
  firstSyntaxError(): { line: number; column: number } | null {
    const tree = ensureSyntaxTree(this.view.state, this.view.state.doc.length, 200);
    if (!tree) return null;
    let at: number | null = null;
    tree.iterate({
      enter: (node) => {
        if (at !== null) return false;
        if (node.type.isError) at = node.from;
        return undefined;
      },
    });
    if (at === null) return null;
    const line = this.view.state.doc.lineAt(at);
    return { line: line.number, column: characterColumn(line.text, at - line.from) };
  }

  /** Puts the cursor on a line (and column) and focuses the editor. */
  goTo(line: number, column: number | null): void {
    const doc = this.view.state.doc;
    const target = doc.line(Math.min(Math.max(line, 1), doc.lines));
    const pos = target.from + offsetOf(target.text, column ?? 1);
    this.view.dispatch({ selection: EditorSelection.cursor(pos), scrollIntoView: true });
    this.view.focus();
  }

  /** Inserts a whole line above the cursor's line. */
  insertLine(text: string): void {
    const line = this.view.state.doc.lineAt(this.view.state.selection.main.head);
    this.view.dispatch({
      changes: { from: line.from, insert: `${text}\n` },
      selection: EditorSelection.cursor(line.from + text.length + 1),
      scrollIntoView: true,
    });
    this.view.focus();
  }
}
