/** What every control listener and handler is given: the store, settings, clock and log. */
import type { Config } from '../config/load';
import type { StatusView } from '../protocol/admin';
import type { GatewayStatus } from '../protocol/gateways';
import type { Logger } from '../runtime/log';
import { hasCode } from '../protocol/coded-error';
import type { RunOnceView, SettlerHalt, SettlerStatus } from '../protocol/settlement';
import type { Actor, Store } from './store';
import type { Router } from './http/router';
import type { PoolCoverage } from '../protocol/lps';
import type { ReceiptChainGuard } from './receipts/chain-guard';

export interface ControlContext {
  store: Store;
  config: Readonly<Config>;
  log: Logger;
  /** Wall clock in ms; injected so tests can move time. */
  now: () => number;
  /** Public URLs of this control's listeners (filled in once they are bound). */
  urls: { control: string; api: string; indexer: string };
  startedAt: number;
  dataDir: string;
  /** This control's id (`ctl_…`, kept in the data dir's `control-id`). */
  controlId: string;
  /** Every gateway known to control, with whether it is connected now. */
  gateways: () => Promise<GatewayStatus[]>;
  /** The settler's state; null while no settler runs in this process. */
  settler: () => Promise<SettlerStatus> | null;
  /**
   * Evaluate coverage now and tell the gateways (coverage.ts), rather than at the next second:
   * after an operator paused or resumed it, or money reached the pool. Resolves once the
   * gateways' lines are written (never rejects). Absent before the coverage loop runs.
   */
  coverageChanged?: () => Promise<void>;
  /** Coverage as the coverage loop last evaluated it (null before the first); absent without the loop. */
  coverage?: () => PoolCoverage | null;
  /** The receipt chain as this control verified it: checked before a checkpoint is signed or a receipt served for consistency. */
  receiptChain: ReceiptChainGuard;
}

/**
 * Routes a feature serves on another feature's listener, passed in by `server.ts`: the access
 * applications' form and API on the public API's, the public site's feeds on the indexer's.
 */
export type RegisterRoutes = (router: Router, ctx: ControlContext) => void;

/**
 * The settler as the status answers show it: the running settler's own status, or, while no
 * settler runs in this process, `not_running` with the backlog read from the store. One
 * source for `svcctl status` (admin) and the public status page.
 */
export async function settlerView(ctx: ControlContext): Promise<StatusView['settler']> {
  return (
    (await ctx.settler()) ?? {
      state: 'not_running',
      cadence_ms: null,
      batch_cap: null,
      backlog: (await ctx.store.settlement.backlog()).count,
      lag_ms: null,
      last_run_at: null,
      last_batch: null,
      last_error: null,
      halted: null,
      leader: null,
    }
  );
}

/**
 * The settler as the admin routes drive it (`settler/settler.ts`'s `Settler`, handed to them by
 * `server.ts`). `resume` and `runOnce` reject while it is halted with the error {@link settlerHaltOf}
 * reads.
 */
export interface SettlerControls {
  status(): Promise<SettlerStatus>;
  pause(by: Actor): Promise<SettlerStatus>;
  resume(by: Actor): Promise<SettlerStatus>;
  runOnce(): Promise<RunOnceView>;
  /** Look again for settled batches without a receipt: the halt, or null once there are none. */
  checkReceipts(): Promise<SettlerHalt | null>;
}

/** The halt a settler's refusal carries (code `SVC_ERR_SETTLER_HALTED`), or null for any other error. */
export function settlerHaltOf(err: unknown): SettlerHalt | null {
  return hasCode(err, 'SVC_ERR_SETTLER_HALTED') && 'halt' in err ? (err.halt as SettlerHalt) : null;
}
