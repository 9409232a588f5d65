/**
 * Characters that do not belong in text people type: the one rule for which a stored string
 * may hold, the zod string types that enforce it at the API boundary, and the escaping
 * `svcctl` applies before it prints a server value on a terminal.
 *
 * Control characters: C0 is U+0000–U+001F, DEL is U+007F, C1 is U+0080–U+009F. None of them
 * belongs in a name, an id, a URL or a reference; an ESC (`\x1b[2J`) clears the operator's
 * screen, a CR/LF splits a URL or a log line. Free text (notes, changelog text, reasons) may
 * hold a tab; answers typed into a form's text area may also hold line breaks.
 *
 * Characters that make text read other than it is are refused in every field, free text
 * included: the bidirectional controls (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069;
 * a U+202E shows `Acme<U+202E>gpj.exe` as `Acmeexe.jpg` on a public page), the line and
 * paragraph separators U+2028/U+2029 (a line break to some renderers and terminals, none to
 * others), and the 66 noncharacters (U+FDD0–U+FDEF and the last two code points of every
 * plane, U+FFFE/U+FFFF to U+10FFFE/U+10FFFF), which are not text at all.
 */
import { z } from 'zod';

/**
 * How much of C0/C1 a field accepts.
 * - `line`: none (names, ids, URLs, references).
 * - `text`: tab only (free text: notes, changelog text, reasons).
 * - `multiline`: tab, LF and CR (answers typed into a text area).
 */
export type TextKind = 'line' | 'text' | 'multiline';

// Each pattern: the kind's control characters, then the bidi controls, U+2028/U+2029 and the
// noncharacters (Unicode's Bidi_Control and Noncharacter_Code_Point properties).
// eslint-disable-next-line no-control-regex -- control characters are what these refuse
const LINE = /[\u0000-\u001f\u007f-\u009f\p{Bidi_Control}\u2028\u2029\p{Noncharacter_Code_Point}]/u;
// eslint-disable-next-line no-control-regex -- as above
const TEXT = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\p{Bidi_Control}\u2028\u2029\p{Noncharacter_Code_Point}]/u;
// eslint-disable-next-line no-control-regex -- as above
const MULTILINE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\p{Bidi_Control}\u2028\u2029\p{Noncharacter_Code_Point}]/u;

const PATTERNS: Readonly<Record<TextKind, RegExp>> = { line: LINE, text: TEXT, multiline: MULTILINE };

// eslint-disable-next-line no-control-regex -- control characters are what it tells apart
const CONTROL = /^[\u0000-\u001f\u007f-\u009f]$/;
const BIDI_CONTROL = /^\p{Bidi_Control}$/u;
const SEPARATOR = /^[\u2028\u2029]$/;

/** `U+001B` for `\x1b`, `U+1FFFE` for a character outside the BMP. */
export function codePointName(ch: string): string {
  return 'U+' + ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
}

/**
 * The first character of `value` a field of `kind` does not accept (a control character the
 * kind does not allow, a bidi control, U+2028/U+2029 or a noncharacter), or null when there is
 * none.
 * @default kind `line`
 */
export function forbiddenCharacter(value: string, kind: TextKind = 'line'): string | null {
  const match = PATTERNS[kind].exec(value);
  return match === null ? null : match[0];
}

/** The validation message for a forbidden character; names the code point, never echoes the value. */
export function forbiddenCharacterMessage(ch: string, kind: TextKind): string {
  const found = `(found ${codePointName(ch)})`;
  if (CONTROL.test(ch)) {
    const allowed = kind === 'line' ? '' : kind === 'text' ? ' other than tab' : ' other than tab and line breaks';
    return `must not contain control characters${allowed} ${found}`;
  }
  if (BIDI_CONTROL.test(ch)) return `must not contain bidirectional text controls ${found}`;
  if (SEPARATOR.test(ch)) return `must not contain line or paragraph separators ${found}`;
  return `must not contain noncharacters ${found}`;
}

/**
 * A zod string that refuses what {@link forbiddenCharacter} finds: C0/C1 control characters
 * (tab and line breaks as `kind` allows), bidi controls, U+2028/U+2029 and noncharacters. The
 * check runs on the raw input, before any `.trim()` chained after it, so a trailing CR/LF is
 * refused rather than silently cut off.
 *
 * @example `plainString('text').trim().min(1).max(2000)` for a note.
 * @default kind `line`
 */
export function plainString(kind: TextKind = 'line', params?: { message?: string }): z.ZodString {
  const base = params?.message === undefined ? z.string() : z.string({ message: params.message });
  return base.superRefine((value, ctx) => {
    const ch = forbiddenCharacter(value, kind);
    if (ch !== null) ctx.addIssue({ code: 'custom', message: forbiddenCharacterMessage(ch, kind) });
  });
}

// eslint-disable-next-line no-control-regex -- control characters are what these escape
const ESCAPE_ALL = /[\u0000-\u001f\u007f-\u009f\p{Bidi_Control}\u2028\u2029\p{Noncharacter_Code_Point}]/gu;
// eslint-disable-next-line no-control-regex -- as above
const ESCAPE_BUT_TAB_LF = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Bidi_Control}\u2028\u2029\p{Noncharacter_Code_Point}]/gu;

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

/** `\x1b` for ESC, `\u202e` for a BMP character, `\u{1fffe}` for one beyond it. */
const visible = (ch: string): string => {
  const cp = ch.codePointAt(0)!;
  if (cp <= 0xff) return '\\x' + hex(cp, 2);
  return cp <= 0xffff ? '\\u' + hex(cp, 4) : `\\u{${hex(cp, 1)}}`;
};

/**
 * `text` with every character a field may not hold shown as a visible escape: C0/C1 control
 * characters as `\xNN` (`\x1b`, `\x00`, `\x9b`), bidi controls, U+2028/U+2029 and noncharacters
 * as `\uNNNN` (`\u202e`, `\u2028`, `\ufffe`; `\u{1fffe}` beyond the BMP). So a value printed on
 * a terminal cannot move the cursor, clear the screen, change the title, reorder what it shows
 * or break a line. With `keepLayout`, tab and LF pass (they only lay out lines the caller built)
 * and a CRLF pair becomes LF; a lone CR is escaped, since it would overwrite the line.
 */
export function escapeForTerminal(text: string, keepLayout = false): string {
  if (!keepLayout) return text.replace(ESCAPE_ALL, visible);
  return text.replace(/\r\n/g, '\n').replace(ESCAPE_BUT_TAB_LF, visible);
}

// What JSON.stringify leaves raw of the above: DEL, C1, and the rest (it escapes C0 itself).
const JSON_RAW = /[\u007f-\u009f\p{Bidi_Control}\u2028\u2029\p{Noncharacter_Code_Point}]/gu;

/**
 * JSON text (from `JSON.stringify`, which escapes C0 itself) with DEL, C1, bidi controls,
 * U+2028/U+2029 and noncharacters written as `\uNNNN` escapes (a surrogate pair beyond the BMP).
 * They can only occur inside strings, so the document parses to the same value.
 */
export function escapeJsonText(json: string): string {
  return json.replace(JSON_RAW, (ch) => {
    let out = '';
    for (let i = 0; i < ch.length; i++) out += '\\u' + hex(ch.charCodeAt(i), 4);
    return out;
  });
}
