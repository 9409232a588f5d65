/** `svcctl settler run-once`: settle everything received until now (also while paused); lists the batches made. */
import type { RunOnceView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { money } from '../../money';
import { table } from '../../output';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const result = await deps.client.post<RunOnceView>('/_admin/v1/settler/run-once');
  if (opts.json) {
    deps.out.json(result);
    return EXIT_OK;
  }
  if (result.batches.length === 0) deps.out.line('Nothing to settle.');
  else {
    deps.out.line(
      table(
        ['BATCH', 'ENDPOINT', 'CALLS', 'PREMIUMS', 'FEES', 'REFUNDS', 'OWED', 'CLAMPED'],
        result.batches.map((b) => [b.id, b.endpoint_id, b.calls, b.premiums, b.treasury_fees, b.refunds, b.refunds_owed, b.clamped_calls]),
      ),
    );
    deps.out.line(
      `Settled ${result.calls} calls in ${result.batches.length} batches: premiums ${money(result.premiums)}, refunds ${money(result.refunds)} of ${money(result.refunds_owed)} owed (${result.clamped_calls} clamped).`,
    );
  }
  if (result.backlog > 0) deps.out.line(`${result.backlog} calls arrived since and wait for the next run.`);
  return EXIT_OK;
}
