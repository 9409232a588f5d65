/**
 * RFC 9162 §2.1 Merkle trees with SHA-256, as Certificate Transparency logs build them:
 *
 * - leaf hash `SHA-256(0x00 ‖ leaf bytes)`, node hash `SHA-256(0x01 ‖ left ‖ right)`;
 * - MTH(D[n]) for n > 1 splits D at k, the largest power of two smaller than n (§2.1.1);
 * - PATH(m, D[n]) is the inclusion proof of leaf m (§2.1.3.1), checked by the algorithm
 *   of §2.1.3.2.
 *
 * Trees are built bottom-up: each level pairs neighbours left to right and lifts an unpaired
 * last node unchanged, which yields exactly the tree of the recursive definition (its left
 * subtrees are the complete ones).
 *
 * A hash is held as a `Hash32`: a 32-character latin1 ("binary") string, one character per byte. Node
 * 20's `crypto.hash` makes a string several times faster than a Buffer, and settlement
 * hashes every call twice, so this is what keeps receipts cheap. `toHex`/`fromHex` convert
 * at the wire. Zod-free, node:crypto only: the receipts verifier and the SDK ship this file
 * as it is.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9162#section-2.1
 */
import { hash } from 'node:crypto';

/** A SHA-256 hash as a 32-character latin1 string (each character one byte, 0–255). */
export type Hash32 = string;

/** Size of a SHA-256 hash in bytes. */
export const HASH_BYTES = 32;
const HEX_HASH = /^[0-9a-f]{64}$/;

/** `SHA-256(0x00 ‖ leaf)`: the hash of one leaf (RFC 9162 §2.1.1). A string leaf is hashed as its UTF-8. */
export function leafHash(leaf: string | Buffer): Hash32 {
  if (typeof leaf === 'string') return hash('sha256', '\u0000' + leaf, 'binary');
  return hash('sha256', Buffer.concat([Buffer.of(0x00), leaf]), 'binary');
}

const scratch = Buffer.alloc(1 + 2 * HASH_BYTES);

/** `SHA-256(0x01 ‖ left ‖ right)`: the hash of an interior node (RFC 9162 §2.1.1). */
export function nodeHash(left: Hash32, right: Hash32): Hash32 {
  if (left.length !== HASH_BYTES || right.length !== HASH_BYTES) throw new TypeError('merkle: node children must be 32-byte hashes');
  scratch[0] = 0x01;
  scratch.write(left, 1, HASH_BYTES, 'latin1');
  scratch.write(right, 1 + HASH_BYTES, HASH_BYTES, 'latin1');
  return hash('sha256', scratch, 'binary');
}

/** The hash of the empty tree, `SHA-256()` (RFC 9162 §2.1.1). */
export const emptyRoot = (): Hash32 => hash('sha256', Buffer.alloc(0), 'binary');

/** Lowercase hex of a hash. */
export const toHex = (h: Hash32): string => Buffer.from(h, 'latin1').toString('hex');

/** The hash written as 64 lowercase hex digits, or null for anything else. */
export function fromHex(hex: unknown): Hash32 | null {
  return typeof hex === 'string' && HEX_HASH.test(hex) ? Buffer.from(hex, 'hex').toString('latin1') : null;
}

/** One level up: neighbours paired left to right, an unpaired last node lifted unchanged. */
function parentLevel(level: readonly Hash32[]): Hash32[] {
  const up: Hash32[] = new Array<Hash32>(Math.ceil(level.length / 2));
  for (let i = 0, j = 0; i < level.length; i += 2, j++) up[j] = i + 1 < level.length ? nodeHash(level[i]!, level[i + 1]!) : level[i]!;
  return up;
}

/** MTH(D[n]): the root of the tree over these leaf hashes, in order (RFC 9162 §2.1.1). */
export function rootOf(leafHashes: readonly Hash32[]): Hash32 {
  if (leafHashes.length === 0) return emptyRoot();
  let level: readonly Hash32[] = leafHashes;
  while (level.length > 1) level = parentLevel(level);
  return level[0]!;
}

/**
 * Level `height` of the tree over these leaf hashes, bottom-up: the roots of the aligned
 * runs of 2^height leaves (the last run may be shorter). Every such run is a subtree of the
 * RFC 9162 tree, and the tree over these roots is the rest of it: `rootOf(subtreeRoots(h, k))`
 * is `rootOf(h)`, and a leaf's audit path is its path inside its run followed by the run's
 * path among the runs.
 */
export function subtreeRoots(leafHashes: readonly Hash32[], height: number): Hash32[] {
  let level: readonly Hash32[] = leafHashes;
  for (let i = 0; i < height && level.length > 1; i++) level = parentLevel(level);
  return level === leafHashes ? [...leafHashes] : (level as Hash32[]);
}

/**
 * PATH(m, D[n]): the audit path of leaf `index` in the tree over `leafHashes`, from the
 * leaf's sibling up to the child of the root (RFC 9162 §2.1.3.1), and the tree's root.
 * Costs n − 1 node hashes.
 */
export function inclusionPath(leafHashes: readonly Hash32[], index: number): { path: Hash32[]; root: Hash32 } {
  if (!Number.isSafeInteger(index) || index < 0 || index >= leafHashes.length) {
    throw new RangeError(`merkle: leaf index ${index} is outside a tree of ${leafHashes.length}`);
  }
  const path: Hash32[] = [];
  let level: readonly Hash32[] = leafHashes;
  let i = index;
  while (level.length > 1) {
    const sibling = i ^ 1;
    if (sibling < level.length) path.push(level[sibling]!);
    level = parentLevel(level);
    i >>= 1;
  }
  return { path, root: level[0]! };
}

/**
 * The root an inclusion proof implies, by the verification algorithm of RFC 9162 §2.1.3.2,
 * or null when the proof cannot belong to a tree of `treeSize` leaves (index out of range, a
 * path too short or too long, a malformed hash).
 */
export function rootFromInclusionProof(index: number, treeSize: number, leaf: Hash32, path: readonly Hash32[]): Hash32 | null {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(treeSize) || index < 0 || index >= treeSize) return null;
  if (leaf.length !== HASH_BYTES) return null;
  // fn and sn as in the RFC; both stay below 2^53, so halving with Math.floor is exact.
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (p.length !== HASH_BYTES || sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

/** True when `path` proves `leaf` at `index` in the tree of `treeSize` leaves whose root is `root`. */
export function verifyInclusion(index: number, treeSize: number, leaf: Hash32, path: readonly Hash32[], root: Hash32): boolean {
  return rootFromInclusionProof(index, treeSize, leaf, path) === root;
}
