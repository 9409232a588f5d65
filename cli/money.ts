/**
 * Money on the command line. Amounts are integer micro-units (6 decimals) everywhere in svc;
 * on the command line a whole number is taken as micro-units and a number with a decimal
 * point as units: `12500000` and `12.5` are the same amount.
 */
import { UsageError } from './exit-codes';

export const MICRO_PER_UNIT = 1_000_000;
export const AMOUNT_HELP = 'micro-units as a whole number (12500000), or units with a decimal point (12.5 = 12500000 micro)';

/** Micro-units in `text`, or a usage error naming `flag`. Must be at least 1 micro-unit. */
export function parseAmount(flag: string, text: string): number {
  const value = text.trim();
  let micro: number;
  if (/^\d+$/.test(value)) micro = Number(value);
  else {
    const match = /^(\d*)\.(\d*)$/.exec(value);
    if (match === null || (match[1] === '' && match[2] === '')) throw new UsageError(`${flag} must be ${AMOUNT_HELP}; got ${JSON.stringify(text)}`);
    if (match[2]!.length > 6) throw new UsageError(`${flag} has more than 6 decimals (1 micro-unit is 0.000001)`);
    micro = Number(match[1] || '0') * MICRO_PER_UNIT + Number(match[2]!.padEnd(6, '0'));
  }
  if (!Number.isSafeInteger(micro)) throw new UsageError(`${flag} is too large`);
  if (micro < 1) throw new UsageError(`${flag} must be at least 1 micro-unit`);
  return micro;
}

/** `12500000` → `12.5`; `7` → `0.000007`. */
export function formatUnits(micro: number): string {
  const sign = micro < 0 ? '-' : '';
  const abs = Math.abs(micro);
  const whole = Math.floor(abs / MICRO_PER_UNIT);
  const frac = String(abs % MICRO_PER_UNIT).padStart(6, '0').replace(/0+$/, '');
  return `${sign}${whole}${frac === '' ? '' : `.${frac}`}`;
}

/** `12.5 (12500000 micro)`. */
export const money = (micro: number): string => `${formatUnits(micro)} (${micro} micro)`;
