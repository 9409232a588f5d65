/** `svcctl ledger verify`: check the ledger's invariants; exit 1 with the first violation. */
import type { LedgerVerifyView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_FAILURE, EXIT_OK } from '../../exit-codes';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const result = await deps.client.get<LedgerVerifyView>('/_admin/v1/ledger/verify');
  if (opts.json) deps.out.json(result);
  else if (result.ok) {
    const c = result.counts;
    deps.out.line(
      `Ledger OK: ${result.checks.length} invariants hold over ${c.transfers} transfers, ${c.accounts} accounts, ${c.settled_calls} settled calls in ${c.batches} batches.`,
    );
  }
  if (!result.ok) {
    deps.out.error(`svcctl: ledger verify failed: ${result.violation}`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
