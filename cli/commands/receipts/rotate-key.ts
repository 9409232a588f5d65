/**
 * `svcctl receipts rotate-key`: control makes a new receipt signing key in its data dir;
 * receipts from the next batch on carry its `kid`. Every earlier public key stays in
 * `{indexer_url}/api/receipts/keys`, so receipts signed before keep verifying.
 */
import type { RotateKeyView } from '../../../protocol/receipts';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { postMoney } from '../approvals/render';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const result = await postMoney<RotateKeyView>(deps, '/_admin/v1/receipts/rotate-key', {}, opts.json);
  if (result === null) return EXIT_OK;
  if (opts.json) deps.out.json(result);
  else for (const line of rotatedLines(result)) deps.out.line(line);
  return EXIT_OK;
}

export const rotatedLines = (result: RotateKeyView): string[] => [
  `Receipts are now signed with key ${result.kid} (was ${result.previous_kid}).`,
  `Published keys (current first): ${result.published.join(', ')}`,
];
