/**
 * 11: the public pages (`{api_url}/providers`, `/providers/<id>`, `{indexer_url}/activity`).
 *
 * - `endpoints.display_name`: the name the pages show beside a provider's opaque id
 *   (`svcctl endpoints update ID --display-name "Weather v2"`); NULL shows the id alone.
 * - Two partial indexes over the calls that were owed a refund when they settled
 *   (`refund_owed > 0`: paid, or clamped by the pool or an hourly cap), newest first overall and
 *   per endpoint, so "the last refunds" read a few index entries instead of scanning every
 *   call of a provider. Only refunded calls are in them, so settling an `ok` call pays nothing.
 */
export default `
  ALTER TABLE endpoints ADD COLUMN display_name TEXT;

  CREATE INDEX outcomes_refunded ON outcomes (started_at, call_id) WHERE refund_owed > 0;
  CREATE INDEX outcomes_refunded_by_endpoint ON outcomes (endpoint_id, started_at, call_id) WHERE refund_owed > 0;
`;
