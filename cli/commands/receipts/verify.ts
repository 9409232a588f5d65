/**
 * `svcctl receipts verify [--indexer URL] [--jwks FILE]`: walk the whole receipt chain from
 * the indexer's public reads only (no database, no admin token once the indexer is named):
 * every receipt signed by a key of the JWKS (`--jwks` pins one; else the published
 * `/api/receipts/keys`), every `prev` the hash of the receipt before, batch numbers 1, 2, 3 …
 * without gaps, and the sums of `refunds` and `premiums` over the indexer's `settled_batches`
 * equal to its `total_refunds` and `total_premiums`. Exit 0, or 1 naming the first bad batch.
 * With `--call ID`, one call's refund instead (`verify-call.ts`).
 *
 * `--since-checkpoint FILE` (a checkpoint saved from `/api/receipts/checkpoint`) checks instead
 * that the history served now extends it and that the history before it is the one it signed:
 * every receipt from batch 1 to the served checkpoint's (`/api/receipts/consistency`, 1000 a
 * read) is signed and chained, the one of the saved checkpoint's batch hashes to its `hash`
 * (`verifyConsistency` of `protocol/receipts-consistency.ts`, as the SDK runs it). A batch
 * rewritten, swapped or changed, before or after the checkpoint, is named (with both hashes
 * where there are two); exit 1.
 *
 * Without `--indexer`, the indexer's URL comes from control's admin status (as for `svcctl
 * stats`); the admin token is never sent to the indexer (`../../indexer-client.ts`, which also
 * waits out a 429).
 */
import { readFileSync } from 'node:fs';
import type { StatsAnswer } from '../../../protocol/indexer';
import type {
  CallProof,
  Checkpoint,
  ConsistencyAnswer,
  ConsistencyVerifyView,
  ReceiptsPage,
  ReceiptsVerifyView,
} from '../../../protocol/receipts';
import { verifyConsistency } from '../../../protocol/receipts-consistency';
import { ReceiptKeyring, checkpointShapeProblem } from '../../../protocol/receipts-verify';
import { walkReceiptChain, type ReceiptChainWalk } from '../../../protocol/receipts-walk';
import type { Deps } from '../../deps';
import type { IndexerClient } from '../../indexer-client';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../../exit-codes';
import { formatUnits } from '../../money';
import { verifyCall } from './verify-call';

/** Receipts asked for per page (the indexer's maximum). @default 1000 */
export const VERIFY_PAGE = 1_000;
export interface VerifyOptions {
  indexer?: string;
  jwks?: string;
  /** Verify this one call's proof instead of the whole chain. */
  call?: string;
  sinceCheckpoint?: string;
  json?: boolean;
}

function readJsonFile(option: string, file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${option} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${option} ${file}: not JSON`);
  }
}

/** `--since-checkpoint FILE`: does the served history extend the saved checkpoint? */
async function sinceCheckpoint(file: string, indexer: string, jwks: unknown, opts: VerifyOptions, deps: Deps): Promise<number> {
  const saved = readJsonFile('--since-checkpoint', file) as Checkpoint;
  const shape = checkpointShapeProblem(saved);
  if (shape !== null) throw new UsageError(`--since-checkpoint ${file}: not a checkpoint (${shape})`);
  const current = await deps.indexer.get<Checkpoint>(`${indexer}/api/receipts/checkpoint`);
  const keyring = new ReceiptKeyring(jwks);
  const range = async (from: number, to: number) =>
    (await deps.indexer.get<ConsistencyAnswer>(`${indexer}/api/receipts/consistency?from=${from}&to=${to}`)).receipts;
  const verdict = await verifyConsistency(saved, current, range, keyring);
  const result: ConsistencyVerifyView = {
    ok: verdict.ok,
    indexer,
    from: saved.batch,
    to: current.batch,
    receipts: verdict.receipts,
    checkpoint: current,
    batch: verdict.batch,
    expected: verdict.expected,
    served: verdict.served,
    reason: verdict.reason,
    failure: verdict.failure,
  };
  if (opts.json) deps.out.json(result);
  else if (verdict.ok) {
    deps.out.line(
      `Receipts consistent: the history served now extends the checkpoint of batch ${saved.batch} unchanged, up to batch ${current.batch}, and the history before it is the one it signed (${verdict.receipts} receipts from batch 1, each signed and chained). The served checkpoint, to save for next time:`,
    );
    deps.out.line(JSON.stringify(current));
  }
  if (!verdict.ok) {
    deps.out.error(`svcctl: receipts verify failed: ${verdict.reason}`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}

/** Walk the chain from the indexer's public reads; the first problem ends the walk. */
function verifyReceipts(indexer: string, jwks: unknown, client: IndexerClient): Promise<ReceiptChainWalk> {
  return walkReceiptChain(
    jwks,
    {
      totals: async () => {
        const stats = await client.get<StatsAnswer>(`${indexer}/api/stats`);
        return { batches: stats.settled_batches, refunds: stats.total_refunds, premiums: stats.total_premiums };
      },
      page: (after, limit) => client.get<ReceiptsPage>(`${indexer}/api/receipts?after=${after}&limit=${limit}`),
    },
    VERIFY_PAGE,
  );
}

export async function run(opts: VerifyOptions, deps: Deps): Promise<number> {
  const indexer = await deps.indexer.resolve(deps.client, opts.indexer);
  const jwks =
    opts.jwks !== undefined ? readJsonFile('--jwks', opts.jwks) : await deps.indexer.get<unknown>(`${indexer}/api/receipts/keys`);
  if (opts.sinceCheckpoint !== undefined && opts.call !== undefined)
    throw new UsageError('--since-checkpoint and --call check different things: give one');
  if (opts.sinceCheckpoint !== undefined) return sinceCheckpoint(opts.sinceCheckpoint, indexer, jwks, opts, deps);
  if (opts.call !== undefined)
    return verifyCall(opts.call, indexer, jwks, (url) => deps.indexer.get<CallProof>(url), deps, opts.json === true);
  const { keyring, chain, problem } = await verifyReceipts(indexer, jwks, deps.indexer);

  const result: ReceiptsVerifyView = {
    ok: problem === null,
    indexer,
    receipts: chain.count,
    keys: keyring.size,
    jwks: opts.jwks !== undefined ? 'pinned' : 'published',
    refunds: chain.refunds,
    premiums: chain.premiums,
    first_bad_batch: problem?.batch ?? null,
    reason: problem?.reason ?? null,
    key_problems: keyring.problems,
  };
  if (opts.json) deps.out.json(result);
  else {
    for (const p of keyring.problems) deps.out.error(`svcctl: warning: JWKS ${p}`);
    if (problem === null) {
      const span =
        chain.count === 0
          ? 'no receipts yet'
          : chain.count === 1
            ? '1 receipt (batch 1)'
            : `${chain.count} receipts (batches 1–${chain.count})`;
      deps.out.line(
        `Receipts OK: ${span}, each signed by a ${result.jwks} key and chained to the one before; refunds ${formatUnits(chain.refunds)} and premiums ${formatUnits(chain.premiums)} equal the indexer's totals.`,
      );
    }
  }
  if (problem !== null) {
    deps.out.error(`svcctl: receipts verify failed: ${problem.reason}`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
