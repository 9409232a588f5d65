/**
 * The `Accept` request header (RFC 9110 §12.5.1): media ranges with q-values, and the one
 * question control asks of it: is this a person's browser, which should see an HTML page,
 * or a program, which should get JSON?
 *
 * A range's weight is its `q` parameter (0 to 1, three decimals; 1 when absent; a malformed
 * `q` makes the range count as 0). A media type takes the weight of the most specific range
 * that matches it (`text/html` over `text/*` over `*\/*`), as §12.5.1 says.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-12.5.1
 */

export interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/** The ranges of an `Accept` value, in the order sent; lower-cased; parameters other than `q` dropped. */
export function parseAccept(header: string | undefined): MediaRange[] {
  if (header === undefined) return [];
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [range, ...params] = part.split(';').map((s) => s.trim());
    const slash = range!.indexOf('/');
    if (slash <= 0 || slash === range!.length - 1) continue;
    const type = range!.slice(0, slash).toLowerCase();
    const subtype = range!.slice(slash + 1).toLowerCase();
    if (type === '*' && subtype !== '*') continue;
    let q = 1;
    for (const param of params) {
      const eq = param.indexOf('=');
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue;
      const value = param.slice(eq + 1).trim();
      q = QVALUE.test(value) ? Number(value) : 0;
      break; // `q` ends the media-type parameters; what follows are extensions
    }
    ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** The weight `ranges` give `type/subtype`: the most specific matching range's q, or 0 when none matches. */
export function weightOf(ranges: readonly MediaRange[], type: string, subtype: string): number {
  let best = -1;
  let q = 0;
  for (const r of ranges) {
    const specificity = r.type === type ? (r.subtype === subtype ? 2 : r.subtype === '*' ? 1 : -1) : r.type === '*' ? 0 : -1;
    if (specificity > best) {
      best = specificity;
      q = r.q;
    }
  }
  return q;
}

/**
 * Whether a request comes from a browser that should be shown HTML: its `Accept` ranks
 * `text/html` above `application/json` and above `*\/*`. A browser's navigation
 * (`text/html,…,*\/*;q=0.8`) does; `*\/*`, `application/json`, no header at all, and
 * `text/html, application/json` (a tie) do not, so programs keep problem+json.
 */
export function prefersHtml(header: string | undefined): boolean {
  const ranges = parseAccept(header);
  const html = weightOf(ranges, 'text', 'html');
  const any = ranges.find((r) => r.type === '*' && r.subtype === '*')?.q ?? 0;
  return html > 0 && html > weightOf(ranges, 'application', 'json') && html > any;
}
