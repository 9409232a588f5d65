/**
 * svcctl's client for the indexer ({indexer_url}): its public reads as JSON (`svcctl stats`,
 * `svcctl receipts verify`). The indexer is public, so no token is ever sent to it. A 429 is
 * waited out (`Retry-After`, at most a minute each time) and retried; any other error status is
 * a `CliError` quoting the problem's detail and code.
 */
import type { StatusView } from '../protocol/admin';
import type { AdminClient } from './client';
import { CliError, UsageError } from './exit-codes';

type FetchLike = typeof fetch;

/** Milliseconds to wait for one indexer answer. @default 10000 */
export const INDEXER_TIMEOUT_MS = 10_000;
/** How often a 429 is waited out before giving up. @default 10 */
export const INDEXER_RATE_LIMIT_RETRIES = 10;

/** `: <detail> (<code>)` of a problem+json body, or nothing. */
function problemDetail(text: string): string {
  try {
    const problem = JSON.parse(text) as { detail?: unknown; code?: unknown };
    if (typeof problem.detail === 'string' && typeof problem.code === 'string') return `: ${problem.detail} (${problem.code})`;
  } catch {
    // not JSON: the status says enough
  }
  return '';
}

export class IndexerClient {
  private readonly fetchImpl: FetchLike;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: { fetch?: FetchLike; sleep?: (ms: number) => Promise<void> } = {}) {
    this.fetchImpl = options.fetch ?? fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * The indexer's URL: `explicit` (`--indexer`) when given, checked, else the one control's admin
   * status reports; without a trailing slash.
   */
  async resolve(admin: AdminClient, explicit: string | undefined): Promise<string> {
    if (explicit !== undefined) {
      if (!/^https?:\/\/[^\s/]+/.test(explicit)) throw new UsageError(`--indexer ${explicit}: not an http(s) URL`);
      return explicit.replace(/\/+$/, '');
    }
    const status = await admin.get<StatusView>('/_admin/v1/status');
    if (!status.urls.indexer) throw new CliError('control reports no indexer URL; pass --indexer');
    return status.urls.indexer.replace(/\/+$/, '');
  }

  /** GET `url` as JSON. */
  async get<T>(url: string): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(INDEXER_TIMEOUT_MS) });
      } catch (err) {
        const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${INDEXER_TIMEOUT_MS} ms` : 'connection failed';
        throw new CliError(`indexer not reachable at ${url} (${reason})`);
      }
      const text = await res.text();
      if (res.status === 429 && attempt < INDEXER_RATE_LIMIT_RETRIES) {
        const wait = Number(res.headers.get('retry-after'));
        await this.sleep(1000 * (Number.isFinite(wait) && wait > 0 ? Math.min(wait, 60) : 1));
        continue;
      }
      if (!res.ok) throw new CliError(`indexer answered ${res.status} for ${url}${problemDetail(text)}`);
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new CliError(`indexer answered ${url} with a body that is not JSON`);
      }
    }
  }
}
