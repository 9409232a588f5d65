/**
 * Control characters in text that people type: the one rule for which C0/C1 characters a
 * stored string may hold, the zod string types that enforce it at the API boundary, and the
 * escaping `svcctl` applies before it prints a server value on a terminal.
 *
 * C0 is U+0000–U+001F, DEL is U+007F, C1 is U+0080–U+009F. None of them belongs in a name, an
 * id, a URL or a reference; an ESC (`\x1b[2J`) clears the operator's screen, a CR/LF splits a
 * URL or a log line. Free text (notes, changelog text, reasons) may hold a tab; answers typed
 * into a form's text area may also hold line breaks.
 */
import { z } from 'zod';

/**
 * How much of C0/C1 a field accepts.
 * - `line`: none (names, ids, URLs, references).
 * - `text`: tab only (free text: notes, changelog text, reasons).
 * - `multiline`: tab, LF and CR (answers typed into a text area).
 */
export type TextKind = 'line' | 'text' | 'multiline';

// eslint-disable-next-line no-control-regex -- control characters are what these refuse
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_BUT_TAB = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_BUT_TAB_LF_CR = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

const PATTERNS: Readonly<Record<TextKind, RegExp>> = {
  line: CONTROL,
  text: CONTROL_BUT_TAB,
  multiline: CONTROL_BUT_TAB_LF_CR,
};

/** `U+001B` for `\x1b`. */
export function codePointName(ch: string): string {
  return 'U+' + ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
}

/**
 * The first character of `value` a field of `kind` does not accept, or null when there is
 * none.
 * @default kind `line`
 */
export function forbiddenControlCharacter(value: string, kind: TextKind = 'line'): string | null {
  const match = PATTERNS[kind].exec(value);
  return match === null ? null : match[0];
}

/** The validation message for a forbidden character; names the code point, never echoes the value. */
export function controlCharacterMessage(ch: string, kind: TextKind): string {
  const allowed = kind === 'line' ? '' : kind === 'text' ? ' other than tab' : ' other than tab and line breaks';
  return `must not contain control characters${allowed} (found ${codePointName(ch)})`;
}

/**
 * A zod string that refuses C0/C1 control characters (tab and line breaks as `kind` allows).
 * The check runs on the raw input, before any `.trim()` chained after it, so a trailing CR/LF
 * is refused rather than silently cut off.
 *
 * @example `plainString('text').trim().min(1).max(2000)` for a note.
 * @default kind `line`
 */
export function plainString(kind: TextKind = 'line', params?: { message?: string }): z.ZodString {
  const base = params?.message === undefined ? z.string() : z.string({ message: params.message });
  return base.superRefine((value, ctx) => {
    const ch = forbiddenControlCharacter(value, kind);
    if (ch !== null) ctx.addIssue({ code: 'custom', message: controlCharacterMessage(ch, kind) });
  });
}

// eslint-disable-next-line no-control-regex -- control characters are what these escape
const ESCAPE_ALL = /[\u0000-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex -- as above
const ESCAPE_BUT_TAB_LF = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

const visible = (ch: string): string => '\\x' + ch.charCodeAt(0).toString(16).padStart(2, '0');

/**
 * `text` with every C0/C1 control character shown as a visible `\xNN` escape (`\x1b`, `\x00`,
 * `\x9b`), so a value printed on a terminal cannot move the cursor, clear the screen or change
 * the title. With `keepLayout`, tab and LF pass (they only lay out lines the caller built) and a
 * CRLF pair becomes LF; a lone CR is escaped, since it would overwrite the line.
 */
export function escapeControlCharacters(text: string, keepLayout = false): string {
  if (!keepLayout) return text.replace(ESCAPE_ALL, visible);
  return text.replace(/\r\n/g, '\n').replace(ESCAPE_BUT_TAB_LF, visible);
}
