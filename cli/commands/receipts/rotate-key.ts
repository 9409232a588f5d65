/**
 * `svcctl receipts rotate-key`: control makes a new receipt signing key in its data dir;
 * receipts from the next batch on carry its `kid`. Every earlier public key stays in
 * `{indexer_url}/api/receipts/keys`, so receipts signed before keep verifying.
 */
import type { RotateKeyView } from '../../../protocol/receipts';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const result = await deps.client.post<RotateKeyView>('/_admin/v1/receipts/rotate-key');
  if (opts.json) {
    deps.out.json(result);
    return EXIT_OK;
  }
  deps.out.line(`Receipts are now signed with key ${result.kid} (was ${result.previous_kid}).`);
  deps.out.line(`Published keys (current first): ${result.published.join(', ')}`);
  return EXIT_OK;
}
