/**
 * Human units used on the CLI and in config: durations (`90s`, `15m`, `2h`, `30d`) and
 * rate limits (`60/min`, `10/s`, `1000/hour`). Parsed in one place so the CLI and the admin
 * API agree.
 */

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
const DURATION_PATTERN = /^(\d+)\s*(s|m|h|d|w)$/;

export const DURATION_HELP = 'a whole number followed by s, m, h, d or w (e.g. 90s, 15m, 2h, 30d)';

/** Seconds in `text` (`2h` → 7200), or null when it is not a duration. */
export function parseDuration(text: string): number | null {
  const match = DURATION_PATTERN.exec(text.trim());
  if (!match) return null;
  const seconds = Number(match[1]) * DURATION_UNITS[match[2]!]!;
  return seconds > 0 && Number.isSafeInteger(seconds) ? seconds : null;
}

export interface RateLimit {
  /** Requests allowed per window (also the burst). */
  count: number;
  /** Window length in seconds. */
  window_seconds: number;
}

const WINDOW_UNITS: Record<string, number> = {
  s: 1,
  sec: 1,
  second: 1,
  m: 60,
  min: 60,
  minute: 60,
  h: 3600,
  hour: 3600,
  d: 86400,
  day: 86400,
};
const RATE_PATTERN = /^(\d+)\s*\/\s*([a-z]+)$/;

export const RATE_LIMIT_HELP = 'COUNT/UNIT with UNIT one of s, min, hour, day (e.g. 60/min, 600/min, 10/s)';

export function parseRateLimit(text: string): RateLimit | null {
  const match = RATE_PATTERN.exec(text.trim().toLowerCase());
  if (!match) return null;
  const count = Number(match[1]);
  const window = WINDOW_UNITS[match[2]!];
  if (window === undefined || !Number.isSafeInteger(count) || count < 1) return null;
  return { count, window_seconds: window };
}

export function formatRateLimit(limit: RateLimit): string {
  const names: Record<number, string> = { 1: 's', 60: 'min', 3600: 'hour', 86400: 'day' };
  const unit = names[limit.window_seconds];
  return unit ? `${limit.count}/${unit}` : `${limit.count}/${limit.window_seconds}s`;
}
