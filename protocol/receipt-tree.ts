/**
 * What control keeps of a batch's Merkle tree (RFC 9162, `protocol/merkle.ts`): its root, and
 * the roots of its aligned runs of 2^SUBTREE_HEIGHT leaves (64), stored with the receipt
 * (`receipts.subtrees`, 32 bytes each). A proof then needs only the rows of the call's run:
 * the path inside the run, then the run's path among the stored run roots. Cost of a proof:
 * at most 64 rows and about 80 hashes, whatever the batch size.
 */
import { leafHash, rootOf, subtreeRoots, type Hash32 } from './merkle';

/** Height of the stored subtrees: runs of 64 leaves. @default 6 */
export const SUBTREE_HEIGHT = 6;
export const SUBTREE_LEAVES = 2 ** SUBTREE_HEIGHT;

export interface BatchTree {
  root: Hash32;
  /** The run roots, 32 bytes each, in order. */
  subtrees: Buffer;
}

/** Runs in a tree of `leaves` leaves. */
export const subtreeCount = (leaves: number): number => Math.max(1, Math.ceil(leaves / SUBTREE_LEAVES));

/** The tree of these canonical leaves (in leaf order). */
export function treeOf(leaves: readonly string[]): BatchTree {
  const runs = subtreeRoots(leaves.map(leafHash), SUBTREE_HEIGHT);
  return { root: rootOf(runs), subtrees: Buffer.from(runs.join(''), 'latin1') };
}

/** The run roots of a stored `subtrees` value. */
export function splitSubtrees(subtrees: Buffer): Hash32[] {
  const roots: Hash32[] = [];
  for (let i = 0; i + 32 <= subtrees.length; i += 32) roots.push(subtrees.toString('latin1', i, i + 32));
  return roots;
}
