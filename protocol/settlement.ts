/**
 * Settlement views shared by control's settler, the status page, the indexer and `svcctl`.
 * Amounts are integers in micro-units (6 decimals).
 */
export type SettlerState = 'running' | 'idle' | 'paused';

export interface SettlerStatus {
  /** `running` while a batch is being committed, `idle` between runs, `paused` by an operator. */
  state: SettlerState;
  cadence_ms: number;
  batch_cap: number;
  /** Outcomes received and not yet settled. */
  backlog: number;
  /** Age of the oldest unsettled outcome, ms (null when the backlog is empty). */
  lag_ms: number | null;
  last_run_at: string | null;
  last_batch: { id: number; endpoint_id: string; calls: number; refunds: number; premiums: number; at: string } | null;
  last_error: string | null;
}
