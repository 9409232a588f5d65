/**
 * 13: drop `outcomes_by_endpoint_time` (endpoint_id, started_at). It served the provider
 * windows, which read the per-minute rollups since migration 4; no statement has used it
 * since (settlement seeks `outcomes_unsettled`, the public lists `outcomes_by_time` and the
 * refund indexes). Every ingested call paid for it: one B-tree insert per row, about a tenth
 * of control's ingest CPU.
 */
export default `
  DROP INDEX IF EXISTS outcomes_by_endpoint_time;
`;
