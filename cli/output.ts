/**
 * Where commands write. Results go to stdout (JSON with `--json`, otherwise text); errors go
 * to stderr as one line. Injected so tests capture output without a process.
 *
 * Everything printed passes through here, and much of it comes from control (names, notes,
 * error details), possibly stored by an older version that accepted control characters or
 * bidi controls. So text lines and table cells show every character a field may not hold
 * (`protocol/text.ts`) as a visible escape (`\x1b`, `\u202e`), and JSON escapes DEL, C1, bidi
 * controls, U+2028/U+2029 and noncharacters as well as C0 (still valid JSON, the same value
 * when parsed).
 */
import { escapeForTerminal, escapeJsonText } from '../protocol/text';

export interface Output {
  /** Write a line of human-readable text to stdout. */
  line(text?: string): void;
  /** Write a value as JSON to stdout (one document, pretty on a TTY, compact otherwise). */
  json(value: unknown): void;
  /** Write a line to stderr. */
  error(text: string): void;
  readonly isTTY: boolean;
}

/**
 * A text line as it may reach a terminal: control characters, bidi controls, line separators
 * and noncharacters escaped, except the tabs and line breaks the command itself uses to lay
 * out its lines.
 */
export function terminalText(text: string): string {
  return escapeForTerminal(text, true);
}

/**
 * `value` as JSON text. `JSON.stringify` escapes C0 but leaves DEL, C1 (an 8-bit CSI, U+009B,
 * among them), bidi controls, U+2028/U+2029 and noncharacters raw; those become `\uNNNN`
 * escapes. They can only occur inside strings, so the document parses to the same value.
 */
export function jsonText(value: unknown, indent?: number): string {
  return escapeJsonText(JSON.stringify(value, null, indent));
}

export function processOutput(): Output {
  const isTTY = Boolean(process.stdout.isTTY);
  return {
    line: (text = '') => void process.stdout.write(terminalText(text) + '\n'),
    json: (value) => void process.stdout.write(jsonText(value, isTTY ? 2 : undefined) + '\n'),
    error: (text) => void process.stderr.write(terminalText(text) + '\n'),
    isTTY,
  };
}

/** An Output that records everything, for tests. */
export function memoryOutput(): Output & { stdout: string[]; stderr: string[]; text(): string; parsed<T = unknown>(): T } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    isTTY: false,
    line: (text = '') => void stdout.push(terminalText(text)),
    json: (value) => void stdout.push(jsonText(value)),
    error: (text) => void stderr.push(terminalText(text)),
    text: () => stdout.join('\n'),
    parsed: <T>() => JSON.parse(stdout.join('\n')) as T,
  };
}

/**
 * Render rows as an aligned text table. Each cell is one line: every control character in it,
 * tab and line breaks included, is shown escaped, and so is every other character a field may
 * not hold (bidi controls, U+2028/U+2029, noncharacters).
 */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cell = (c: string | number | null | undefined) => (c === null || c === undefined ? '-' : escapeForTerminal(String(c)));
  const cells = [headers, ...rows.map((r) => r.map(cell))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : (c ?? '').padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
