/**
 * `svcctl receipts verify --call ID`: check one call's refund from the indexer's public reads
 * alone: its leaf, the RFC 9162 inclusion proof of that leaf in its batch's tree, and the
 * batch's receipt signed by a key of the JWKS (`--jwks` pins one; else the published keys).
 * Exit 0 when every check holds, 1 naming what failed, or when the call is unknown or not
 * settled yet.
 */
import { canonicalCallId } from '../../../protocol/outcome';
import type { CallProof } from '../../../protocol/receipts';
import { verifyCallProof, type RefundVerdict } from '../../../protocol/receipts-verify';
import type { Deps } from '../../deps';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../../exit-codes';
import { formatUnits } from '../../money';

/** What `--call ID --json` prints. */
export interface CallVerifyView extends RefundVerdict {
  call_id: string;
  indexer: string;
  /** The key that signed the batch's receipt. */
  kid: string | null;
}

export async function verifyCall(
  given: string,
  indexer: string,
  jwks: unknown,
  getProof: (url: string) => Promise<CallProof>,
  deps: Deps,
  json: boolean,
): Promise<number> {
  // A UUID in either case is the call stored in lowercase; anything else is refused before a request.
  const callId = canonicalCallId(given);
  if (callId === null) throw new UsageError(`--call ${given}: not a call id (the X-Svc-Call-Id of a call, a UUID)`);
  const proof = await getProof(`${indexer}/api/calls/${callId}/proof`);
  const verdict = verifyCallProof(proof, jwks as Parameters<typeof verifyCallProof>[1], callId);
  const view: CallVerifyView = { call_id: callId, indexer, kid: proof.receipt?.kid ?? null, ...verdict };
  if (json) deps.out.json(view);
  else if (verdict.ok) {
    deps.out.line(
      `Call ${callId} verified: outcome ${verdict.outcome}, refund ${formatUnits(verdict.refund ?? 0)}, premium ${formatUnits(verdict.premium ?? 0)}, ` +
        `in settlement batch ${verdict.batch}, whose receipt is signed by key ${view.kid}.`,
    );
  }
  if (!verdict.ok) {
    for (const reason of verdict.reasons) deps.out.error(`svcctl: receipts verify --call failed: ${reason}`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
