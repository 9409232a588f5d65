/**
 * Money on the command line. Amounts are integer micro-units (6 decimals) everywhere in svc;
 * on the command line a whole number is taken as micro-units and a number with a decimal
 * point as units: `12500000` and `12.5` are the same amount (`parseAmount` in `options.ts`).
 */
export const MICRO_PER_UNIT = 1_000_000;
export const AMOUNT_HELP = 'micro-units as a whole number (12500000), or units with a decimal point (12.5 = 12500000 micro)';

/** `12500000` → `12.5`; `7` → `0.000007`. */
export function formatUnits(micro: number): string {
  const sign = micro < 0 ? '-' : '';
  const abs = Math.abs(micro);
  const whole = Math.floor(abs / MICRO_PER_UNIT);
  const frac = String(abs % MICRO_PER_UNIT)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${sign}${whole}${frac === '' ? '' : `.${frac}`}`;
}

/** `12.5 (12500000 micro)`. */
export const money = (micro: number): string => `${formatUnits(micro)} (${micro} micro)`;
