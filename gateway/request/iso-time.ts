/** ISO 8601 UTC timestamps for outcome records, without a Date per call (hot path). */

let isoSecond = NaN;
let isoPrefix = '';
const MILLIS: string[] = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0') + 'Z');

/**
 * `new Date(ms).toISOString()` for times from 1970 to 9999 (fractions of a millisecond are
 * dropped); the date and time up to the second are formatted once per second.
 */
export function isoTime(time: number): string {
  const ms = Math.floor(time);
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4); // `…T12:34:56.`
    isoSecond = second;
  }
  return isoPrefix + MILLIS[ms - second * 1000]!;
}
