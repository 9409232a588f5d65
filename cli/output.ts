/**
 * Where commands write. Results go to stdout (JSON with `--json`, otherwise text); errors go
 * to stderr as one line. Injected so tests capture output without a process.
 */
export interface Output {
  /** Write a line of human-readable text to stdout. */
  line(text?: string): void;
  /** Write a value as JSON to stdout (one document, pretty on a TTY, compact otherwise). */
  json(value: unknown): void;
  /** Write a line to stderr. */
  error(text: string): void;
  readonly isTTY: boolean;
}

export function processOutput(): Output {
  const isTTY = Boolean(process.stdout.isTTY);
  return {
    line: (text = '') => void process.stdout.write(text + '\n'),
    json: (value) => void process.stdout.write(JSON.stringify(value, null, isTTY ? 2 : undefined) + '\n'),
    error: (text) => void process.stderr.write(text + '\n'),
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
    line: (text = '') => void stdout.push(text),
    json: (value) => void stdout.push(JSON.stringify(value)),
    error: (text) => void stderr.push(text),
    text: () => stdout.join('\n'),
    parsed: <T>() => JSON.parse(stdout.join('\n')) as T,
  };
}

/** Render rows as an aligned text table. */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : (c ?? '').padEnd(widths[i]!))).join('  ').trimEnd())
    .join('\n');
}
