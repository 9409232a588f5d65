/**
 * The settler as the status answers show it: the running settler's own status, or, while no
 * settler runs in this process, `not_running` with the backlog read from the store. One
 * source for `svcctl status` (admin) and the public status page.
 */
import type { StatusView } from '../../protocol/admin';
import type { ControlContext } from '../context';

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
