/**
 * Parsers for svcctl's option and argument values: whole numbers, page limits, durations, rate
 * limits, amounts of money, flag names, on/off, weights. Each returns the value or throws a
 * `UsageError` (exit 2) that names the flag and says what it takes. Commands call them in
 * `run()`, so a module's options stay the strings typed.
 */
import { FLAG_NAMES, normaliseFlagName, type FlagName } from '../protocol/admin';
import { GATEWAY_WEIGHT_MAX } from '../protocol/gateways';
import { DURATION_HELP, RATE_LIMIT_HELP, parseDuration, parseRateLimit } from '../protocol/units';
import { UsageError } from './exit-codes';
import { AMOUNT_HELP, MICRO_PER_UNIT } from './money';

/** A whole number (digits only, surrounding spaces allowed). */
export function wholeNumber(flag: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new UsageError(`${flag} is too large`);
  return n;
}

/** How many items a page holds: a whole number from 1 to `max`. */
export function pageLimit(flag: string, value: string, max: number): number {
  const limit = /^[0-9]{1,7}$/.test(value) ? Number(value) : NaN;
  if (!(limit >= 1 && limit <= max)) throw new UsageError(`${flag} must be an integer from 1 to ${max}`);
  return limit;
}

/** Seconds in `30d`, `12h`, `90m`, `45s`. */
export function durationOption(flag: string, value: string): number {
  const seconds = parseDuration(value);
  if (seconds === null) throw new UsageError(`${flag} ${JSON.stringify(value)} is not a duration; use ${DURATION_HELP}`);
  return seconds;
}

/** `60/min` and the like as the admin API's rate limit. */
export function rateLimitOption(flag: string, value: string): { count: number; window_seconds: number } {
  const limit = parseRateLimit(value);
  if (limit === null) throw new UsageError(`${flag} ${JSON.stringify(value)} is not a rate limit; use ${RATE_LIMIT_HELP}`);
  return limit;
}

/**
 * Micro-units in `text`: a whole number is micro-units, a number with a decimal point units
 * (`12500000` and `12.5` are the same amount). At least 1 micro-unit, or 0 too with
 * `zero: 'allowed'` (a cap, where 0 is no cap).
 */
export function parseAmount(flag: string, text: string, zero: 'allowed' | 'refused' = 'refused'): number {
  const value = text.trim();
  let micro: number;
  if (/^\d+$/.test(value)) micro = Number(value);
  else {
    const match = /^(\d*)\.(\d*)$/.exec(value);
    if (match === null || (match[1] === '' && match[2] === ''))
      throw new UsageError(`${flag} must be ${AMOUNT_HELP}; got ${JSON.stringify(text)}`);
    if (match[2]!.length > 6) throw new UsageError(`${flag} has more than 6 decimals (1 micro-unit is 0.000001)`);
    micro = Number(match[1] || '0') * MICRO_PER_UNIT + Number(match[2]!.padEnd(6, '0'));
  }
  if (!Number.isSafeInteger(micro)) throw new UsageError(`${flag} is too large`);
  if (micro < 1 && zero === 'refused') throw new UsageError(`${flag} must be at least 1 micro-unit`);
  return micro;
}

/** A runtime flag's name (also as `system_flags.<name>`). */
export function flagOption(name: string): FlagName {
  const flag = normaliseFlagName(name);
  if (flag === null) throw new UsageError(`unknown flag ${JSON.stringify(name)}; known flags: ${FLAG_NAMES.join(', ')}`);
  return flag;
}

const ON = new Set(['on', 'true', '1', 'yes', 'enable', 'enabled']);
const OFF = new Set(['off', 'false', '0', 'no', 'disable', 'disabled']);

/** `on` (true, 1, yes, enable, enabled) or `off` (false, 0, no, disable, disabled), any case. */
export function onOff(value: string): boolean {
  const raw = value.toLowerCase();
  if (!ON.has(raw) && !OFF.has(raw)) throw new UsageError(`value must be on or off, got ${JSON.stringify(value)}`);
  return ON.has(raw);
}

/** A gateway's weight: a number above 0, at most `GATEWAY_WEIGHT_MAX`. */
export function weightOption(raw: string): number {
  const weight = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!(weight > 0 && weight <= GATEWAY_WEIGHT_MAX))
    throw new UsageError(`weight must be a number above 0 and at most ${GATEWAY_WEIGHT_MAX}, got ${JSON.stringify(raw)}`);
  return weight;
}
