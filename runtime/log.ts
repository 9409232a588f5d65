/**
 * Structured JSON logs, one object per line. Every message and string field passes through
 * `redactKeys`, so a key that reaches a log call by mistake is cut to its stub.
 */
import { redactKeys } from '../protocol/keys';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LogSink {
  write(line: string): unknown;
}

function scrub(value: unknown): unknown {
  if (typeof value === 'string') return redactKeys(value);
  if (value instanceof Error) return { name: value.name, message: redactKeys(value.message), code: (value as NodeJS.ErrnoException).code };
  if (Array.isArray(value)) return value.map(scrub);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = scrub(v);
    return out;
  }
  return value;
}

export function createLogger(
  options: { level?: LogLevel; sink?: LogSink; base?: Record<string, unknown>; clock?: () => Date } = {},
): Logger {
  const min = RANK[options.level ?? 'info'];
  const sink = options.sink ?? process.stderr;
  const base = options.base ?? {};
  const clock = options.clock ?? (() => new Date());
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[level] < min) return;
    const record = { time: clock().toISOString(), level, ...base, msg, ...(fields ? (scrub(fields) as object) : {}) };
    record.msg = redactKeys(msg);
    sink.write(JSON.stringify(record) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...options, base: { ...base, ...(scrub(fields) as object) } }),
  };
}

/** A logger that drops everything (for in-process tests that do not look at logs). */
export const silentLogger: Logger = createLogger({ level: 'error', sink: { write: () => true } });
