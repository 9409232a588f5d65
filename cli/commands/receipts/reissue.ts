/**
 * `svcctl receipts reissue BATCH`: control signs a settled batch that has no receipt again,
 * from its rows as they are now, with the current key; the audit log and the public changelog
 * record it. The way out of a halted settler when the database is not restored from a backup:
 * run it knowingly, since a rewritten batch gets signed as it is now.
 */
import type { ReissueView } from '../../../protocol/receipts';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { wholeNumber } from '../../options';

export async function run(opts: { batch: string; json?: boolean }, deps: Deps): Promise<number> {
  const batch = wholeNumber('BATCH', opts.batch);
  if (batch < 1) throw new UsageError('BATCH must be a batch number (1 or more)');
  const result = await deps.client.post<ReissueView>(`/_admin/v1/receipts/${batch}/reissue`);
  if (opts.json) {
    deps.out.json(result);
    return EXIT_OK;
  }
  const r = result.receipt;
  deps.out.line(`Batch ${r.batch} signed again with key ${r.kid} (root ${r.root}, ${r.tree_size} calls).`);
  deps.out.line(`Recorded in the audit log and the public changelog (entry ${result.changelog_id}).`);
  deps.out.line(
    result.halted === null
      ? 'Every settled batch has its receipt: the settler is not halted.'
      : `The settler stays halted: ${result.halted.reason}.`,
  );
  return EXIT_OK;
}
