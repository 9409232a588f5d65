/**
 * Verifying settlement receipts and per-call inclusion proofs (docs/design.md §11): the checks an
 * agent, `svcctl receipts verify`, `svcctl ledger verify` and `svc-monitor-sdk` run. Pure
 * functions over the public shapes; no database, no network, no zod at run time (node:crypto,
 * `jcs.ts` and `merkle.ts` only), so the SDK ships this file as it is. The zod schemas of
 * the same shapes are in `receipts.ts`, which checks at compile time that they agree.
 *
 * - A leaf's bytes are its RFC 8785 canonical JSON; its hash is RFC 9162's leaf hash.
 * - A receipt is signed with Ed25519 over the canonical bytes of the receipt without `sig`;
 *   `prev` is the hex SHA-256 of the previous receipt's canonical bytes, `sig` included
 *   (64 zeros for batch 1).
 * - A key's `kid` is its RFC 7638 JWK thumbprint, so a kid can never name another key.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8785 · https://www.rfc-editor.org/rfc/rfc9162#section-2.1
 * @see https://www.rfc-editor.org/rfc/rfc8037 · https://www.rfc-editor.org/rfc/rfc7638
 */
import { createPublicKey, hash, verify, type KeyObject } from 'node:crypto';
import { canonicalize, type JsonValue } from './jcs';
import { fromHex, leafHash, rootFromInclusionProof, toHex, type Hash32 } from './merkle';

export type ReceiptOutcome =
  'ok' | 'latency_breach' | 'server_error' | 'network_error' | 'schema_mismatch' | 'client_error' | 'caller_error';
export type ReceiptClamp = 'pool_depleted' | 'cap_clamped' | 'batch_capped' | 'call_capped';
/** A leaf's possible clamps. */
const LEAF_CLAMPS: readonly unknown[] = [null, 'pool_depleted', 'cap_clamped', 'batch_capped', 'call_capped'];

/** One settled call (see `ReceiptLeaf` in receipts.ts). */
export interface ReceiptLeafFields {
  batch: number;
  call_id: string;
  provider: string;
  outcome: ReceiptOutcome;
  premium: number;
  refund: number;
  clamp: ReceiptClamp | null;
}

/** One batch's signed receipt (see `Receipt` in receipts.ts). */
export interface ReceiptFields {
  v: 1;
  batch: number;
  prev: string;
  root: string;
  tree_size: number;
  refunds: number;
  premiums: number;
  settled_at: string;
  kid: string;
  sig: string;
}

export type UnsignedReceipt = Omit<ReceiptFields, 'sig'>;

/**
 * A signed statement of the chain's head (see `Checkpoint` in receipts.ts): the newest receipt's
 * batch and its hash (the `prev` the next receipt will hold). Whoever saves one can later check
 * that the history served then still leads to it unchanged (`verifyConsistency`).
 */
export interface CheckpointFields {
  v: 1;
  kind: 'checkpoint';
  batch: number;
  hash: string;
  kid: string;
  sig: string;
}

export type UnsignedCheckpoint = Omit<CheckpointFields, 'sig'>;

/** An Ed25519 public key as an OKP JWK (see `ReceiptJwk` in receipts.ts). */
export interface ReceiptJwkFields {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
}

export interface ReceiptJwksFields {
  keys: ReceiptJwkFields[];
}

/** An inclusion proof for one call (see `CallProof` in receipts.ts). */
export interface CallProofFields {
  leaf: ReceiptLeafFields;
  leaf_index: number;
  tree_size: number;
  audit_path: string[];
  receipt: ReceiptFields;
}

/** `prev` of the first receipt. */
export const GENESIS_PREV = '0'.repeat(64);
export const RECEIPT_VERSION = 1;

const isInt = (n: unknown, min = 0): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= min;
const isString = (s: unknown): s is string => typeof s === 'string' && s.length > 0;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const HEX64 = /^[0-9a-f]{64}$/;
/** Printable ASCII without `"` and `\`: JSON.stringify would write it as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

const quote = (s: string): string => (PLAIN.test(s) ? `"${s}"` : canonicalize(s));
function integer(n: number): string {
  if (!Number.isSafeInteger(n)) throw new TypeError(`receipt leaf: ${n} is not a safe integer`);
  return String(n);
}

/**
 * `canonical(leaf)`: the RFC 8785 bytes of a leaf as a string (members in code-unit order:
 * batch, call_id, clamp, outcome, premium, provider, refund). Written directly because
 * settlement makes one per call; a unit test holds it equal to the general `canonicalize`.
 */
export function leafCanonical(leaf: ReceiptLeafFields): string {
  return (
    `{"batch":${integer(leaf.batch)},"call_id":${quote(leaf.call_id)},"clamp":${leaf.clamp === null ? 'null' : quote(leaf.clamp)}` +
    `,"outcome":${quote(leaf.outcome)},"premium":${integer(leaf.premium)},"provider":${quote(leaf.provider)},"refund":${integer(leaf.refund)}}`
  );
}

/** The leaf's RFC 9162 hash, `SHA-256(0x00 ‖ canonical(leaf))`. */
export const leafHashOf = (leaf: ReceiptLeafFields): Hash32 => leafHash(leafCanonical(leaf));

const unsigned = (r: UnsignedReceipt | ReceiptFields): UnsignedReceipt => ({
  v: r.v,
  batch: r.batch,
  prev: r.prev,
  root: r.root,
  tree_size: r.tree_size,
  refunds: r.refunds,
  premiums: r.premiums,
  settled_at: r.settled_at,
  kid: r.kid,
});

/** What is signed: the canonical bytes of the receipt without `sig`. */
export function receiptSigningBytes(r: UnsignedReceipt | ReceiptFields): Buffer {
  return Buffer.from(canonicalize(unsigned(r) as unknown as JsonValue), 'utf8');
}

/** Hex SHA-256 of the receipt's canonical bytes, `sig` included: the next receipt's `prev`. */
export function receiptHash(r: ReceiptFields): string {
  return hash('sha256', canonicalize({ ...unsigned(r), sig: r.sig }), 'hex');
}

/** The checkpoint of the chain whose newest receipt is `head`, to be signed by key `kid`. */
export function checkpointOf(head: ReceiptFields, kid: string): UnsignedCheckpoint {
  return { v: RECEIPT_VERSION, kind: 'checkpoint', batch: head.batch, hash: receiptHash(head), kid };
}

/** What is signed: the canonical bytes of the checkpoint without `sig`. */
export function checkpointSigningBytes(c: UnsignedCheckpoint | CheckpointFields): Buffer {
  const unsignedCheckpoint: UnsignedCheckpoint = { v: c.v, kind: c.kind, batch: c.batch, hash: c.hash, kid: c.kid };
  return Buffer.from(canonicalize(unsignedCheckpoint as unknown as JsonValue), 'utf8');
}

/** Why a checkpoint is malformed, or null. */
export function checkpointShapeProblem(c: unknown): string | null {
  if (c === null || typeof c !== 'object') return 'not an object';
  const x = c as Partial<CheckpointFields>;
  if (x.v !== RECEIPT_VERSION) return `v is ${String(x.v)}, not ${RECEIPT_VERSION}`;
  if (x.kind !== 'checkpoint') return 'kind is not "checkpoint"';
  if (!isInt(x.batch, 1)) return 'batch is not an integer ≥ 1';
  if (typeof x.hash !== 'string' || !HEX64.test(x.hash)) return 'hash is not 64 hex digits';
  if (!isString(x.kid) || !isString(x.sig)) return 'kid or sig is missing';
  const extra = Object.keys(x).filter((k) => !['v', 'kind', 'batch', 'hash', 'kid', 'sig'].includes(k));
  return extra.length > 0 ? `unknown members: ${extra.join(', ')}` : null;
}

/** RFC 7638 thumbprint of an Ed25519 public key (`x`, base64url): SHA-256 of `{"crv","kty","x"}`, base64url. */
export function jwkThumbprint(x: string): string {
  return hash('sha256', canonicalize({ crv: 'Ed25519', kty: 'OKP', x }), 'base64url');
}

/** The public signing keys of a JWKS, by kid. Keys that are not usable are left out and listed in `problems`. */
export class ReceiptKeyring {
  private readonly keys = new Map<string, KeyObject>();
  readonly problems: string[] = [];

  constructor(jwks: unknown) {
    const list = (jwks as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list)) {
      this.problems.push('the JWKS has no "keys" array');
      return;
    }
    for (const jwk of list as Partial<ReceiptJwkFields>[]) {
      const kid = typeof jwk?.kid === 'string' ? jwk.kid : '(no kid)';
      if (jwk?.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string' || !BASE64URL.test(jwk.x)) {
        this.problems.push(`key ${kid}: not an Ed25519 OKP key`);
        continue;
      }
      if (jwk.use !== undefined && jwk.use !== 'sig') {
        this.problems.push(`key ${kid}: "use" is ${String(jwk.use)}, not "sig"`);
        continue;
      }
      if (kid !== jwkThumbprint(jwk.x)) {
        this.problems.push(`key ${kid}: the kid is not the key's RFC 7638 thumbprint`);
        continue;
      }
      try {
        this.keys.set(kid, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }));
      } catch {
        this.problems.push(`key ${kid}: x is not an Ed25519 public key`);
      }
    }
  }

  get size(): number {
    return this.keys.size;
  }

  has(kid: string): boolean {
    return this.keys.has(kid);
  }

  /** Null when the receipt's signature verifies under its `kid`; else why not. */
  checkSignature(r: ReceiptFields): string | null {
    return this.checkSigned(receiptSigningBytes(r), r.kid, r.sig);
  }

  /** Null when the checkpoint's signature verifies under its `kid`; else why not. */
  checkCheckpointSignature(c: CheckpointFields): string | null {
    return this.checkSigned(checkpointSigningBytes(c), c.kid, c.sig);
  }

  private checkSigned(bytes: Buffer, kid: string, sig: string): string | null {
    const key = this.keys.get(kid);
    if (key === undefined) return `signed by key ${kid}, which is not in the JWKS`;
    if (typeof sig !== 'string' || !BASE64URL.test(sig)) return 'sig is not base64url';
    let ok = false;
    try {
      ok = verify(null, bytes, key, Buffer.from(sig, 'base64url'));
    } catch {
      ok = false;
    }
    return ok ? null : `the signature does not verify under key ${kid}`;
  }
}

/** Why a receipt is malformed, or null. */
export function receiptShapeProblem(r: unknown): string | null {
  if (r === null || typeof r !== 'object') return 'not an object';
  const x = r as Partial<ReceiptFields>;
  if (x.v !== RECEIPT_VERSION) return `v is ${String(x.v)}, not ${RECEIPT_VERSION}`;
  if (!isInt(x.batch, 1)) return 'batch is not an integer ≥ 1';
  if (typeof x.prev !== 'string' || !HEX64.test(x.prev)) return 'prev is not 64 hex digits';
  if (typeof x.root !== 'string' || !HEX64.test(x.root)) return 'root is not 64 hex digits';
  if (!isInt(x.tree_size, 1)) return 'tree_size is not an integer ≥ 1';
  if (!isInt(x.refunds) || !isInt(x.premiums)) return 'refunds or premiums is not an integer ≥ 0';
  if (!isString(x.settled_at) || !Number.isFinite(Date.parse(x.settled_at))) return 'settled_at is not a time';
  if (!isString(x.kid) || !isString(x.sig)) return 'kid or sig is missing';
  const extra = Object.keys(x).filter(
    (k) => !['v', 'batch', 'prev', 'root', 'tree_size', 'refunds', 'premiums', 'settled_at', 'kid', 'sig'].includes(k),
  );
  return extra.length > 0 ? `unknown members: ${extra.join(', ')}` : null;
}

/** The first broken link of a chain: the batch it concerns (null when none can be named) and why. */
export interface ChainProblem {
  batch: number | null;
  reason: string;
}

/**
 * Walks the receipt chain in batch order, one receipt at a time: each receipt well formed,
 * signed by a key of the keyring, batch numbers 1, 2, 3 … without gaps or repeats, and each
 * `prev` the hash of the receipt before. `push` answers the first problem; after one, the
 * chain is broken and the caller stops.
 */
export class ChainVerifier {
  private readonly keyring: ReceiptKeyring;
  private last: ReceiptFields | null = null;
  private lastHash = GENESIS_PREV;
  /** Receipts accepted so far, and the sums of their refunds and premiums. */
  count = 0;
  refunds = 0;
  premiums = 0;

  constructor(keyring: ReceiptKeyring) {
    this.keyring = keyring;
  }

  /** The last receipt accepted. */
  get head(): ReceiptFields | null {
    return this.last;
  }

  push(r: ReceiptFields): ChainProblem | null {
    const expected = this.last === null ? 1 : this.last.batch + 1;
    const shape = receiptShapeProblem(r);
    if (shape !== null) {
      const named = isInt((r as Partial<ReceiptFields> | null)?.batch, 1) ? r.batch : expected;
      return { batch: named, reason: `batch ${named}: malformed receipt (${shape})` };
    }
    if (r.batch > expected) {
      const where =
        this.last === null ? `the chain starts at batch ${r.batch}` : `the chain goes from batch ${this.last.batch} to ${r.batch}`;
      return { batch: expected, reason: `batch ${expected}: no receipt (${where})` };
    }
    if (r.batch < expected)
      return { batch: r.batch, reason: `batch ${r.batch}: a second receipt, or one out of order, after batch ${expected - 1}` };
    if (r.prev !== this.lastHash) {
      const what = this.last === null ? 'the first receipt must have 64 zeros' : `it is not the hash of receipt ${this.last.batch}`;
      return { batch: r.batch, reason: `batch ${r.batch}: prev does not link to the chain (${what})` };
    }
    const sig = this.keyring.checkSignature(r);
    if (sig !== null) return { batch: r.batch, reason: `batch ${r.batch}: ${sig}` };
    this.last = r;
    this.lastHash = receiptHash(r);
    this.count++;
    this.refunds += r.refunds;
    this.premiums += r.premiums;
    return null;
  }

  /**
   * After the first `expected.batches` receipts were pushed: their sums must equal the
   * indexer's totals (`settled_batches`, `total_refunds`, `total_premiums` of `/api/stats`).
   */
  checkTotals(expected: { batches: number; refunds: number; premiums: number }): ChainProblem | null {
    if (this.count < expected.batches) {
      return {
        batch: this.count + 1,
        reason: `batch ${this.count + 1}: no receipt (the indexer reports ${expected.batches} settled batches)`,
      };
    }
    if (this.refunds !== expected.refunds) {
      return { batch: null, reason: `the receipts' refunds sum to ${this.refunds}, the indexer's total_refunds is ${expected.refunds}` };
    }
    if (this.premiums !== expected.premiums) {
      return {
        batch: null,
        reason: `the receipts' premiums sum to ${this.premiums}, the indexer's total_premiums is ${expected.premiums}`,
      };
    }
    return null;
  }
}

/** What `verifyCallProof` (and the SDK's `verifyRefund`) resolves to. */
export interface RefundVerdict {
  /** True when every check passed: the leaf is in the batch's tree and the receipt is signed. */
  ok: boolean;
  /** The leaf's amounts, outcome and batch (as the proof states them, even when `ok` is false). */
  refund: number | null;
  premium: number | null;
  outcome: string | null;
  batch: number | null;
  /** Every check that failed, as sentences; empty when `ok`. */
  reasons: string[];
}

function leafShapeProblem(leaf: unknown): string | null {
  if (leaf === null || typeof leaf !== 'object') return 'the leaf is not an object';
  const l = leaf as Partial<ReceiptLeafFields>;
  if (!isInt(l.batch, 1) || !isString(l.call_id) || !isString(l.provider) || !isString(l.outcome))
    return 'the leaf lacks batch, call_id, provider or outcome';
  if (!isInt(l.premium) || !isInt(l.refund)) return 'the leaf premium or refund is not an integer ≥ 0';
  if (!LEAF_CLAMPS.includes(l.clamp)) return 'the leaf clamp is not null, pool_depleted, cap_clamped, batch_capped or call_capped';
  const extra = Object.keys(l).filter((k) => !['batch', 'call_id', 'provider', 'outcome', 'premium', 'refund', 'clamp'].includes(k));
  return extra.length > 0 ? `the leaf has unknown members: ${extra.join(', ')}` : null;
}

/**
 * Check an inclusion proof from `GET /api/calls/<call_id>/proof` against a JWKS: the leaf
 * names `callId` (when given), it hashes and climbs the audit path to the receipt's root
 * (RFC 9162 §2.1.3.2) in a tree of the receipt's size, and the receipt is signed by a key
 * of the JWKS. Works offline: the proof and the JWKS are all it needs.
 */
export function verifyCallProof(proof: CallProofFields, jwks: ReceiptJwksFields | ReceiptKeyring, callId?: string): RefundVerdict {
  const reasons: string[] = [];
  const leaf = (proof as Partial<CallProofFields> | null)?.leaf;
  const receipt = (proof as Partial<CallProofFields> | null)?.receipt;
  const verdict = (): RefundVerdict => ({
    ok: reasons.length === 0,
    refund: isInt(leaf?.refund) ? leaf.refund : null,
    premium: isInt(leaf?.premium) ? leaf.premium : null,
    outcome: typeof leaf?.outcome === 'string' ? leaf.outcome : null,
    batch: isInt(leaf?.batch, 1) ? leaf.batch : null,
    reasons,
  });

  const leafProblem = leafShapeProblem(leaf);
  if (leafProblem !== null) reasons.push(leafProblem);
  const receiptProblem = receiptShapeProblem(receipt);
  if (receiptProblem !== null) reasons.push(`the receipt is malformed (${receiptProblem})`);
  if (reasons.length > 0) return verdict();
  const l = leaf!;
  const r = receipt!;

  if (callId !== undefined && l.call_id !== callId) reasons.push(`the leaf is for call ${l.call_id}, not ${callId}`);
  if (l.batch !== r.batch) reasons.push(`the leaf is in batch ${l.batch} but the receipt is for batch ${r.batch}`);
  if (proof.tree_size !== r.tree_size) reasons.push(`the proof's tree_size ${String(proof.tree_size)} is not the receipt's ${r.tree_size}`);

  const path: Hash32[] = [];
  let pathOk = Array.isArray(proof.audit_path);
  if (pathOk) {
    for (const hex of proof.audit_path) {
      const h = fromHex(hex);
      if (h === null) {
        pathOk = false;
        break;
      }
      path.push(h);
    }
  }
  if (!pathOk) reasons.push('the audit path is not a list of 64-hex-digit hashes');
  else {
    let root: Hash32 | null = null;
    try {
      root = rootFromInclusionProof(proof.leaf_index, r.tree_size, leafHashOf(l), path);
    } catch {
      root = null;
    }
    if (root === null) reasons.push(`the audit path does not fit leaf ${String(proof.leaf_index)} of a tree of ${r.tree_size}`);
    else if (toHex(root) !== r.root) reasons.push("the leaf and audit path do not lead to the receipt's root");
  }

  const keyring = jwks instanceof ReceiptKeyring ? jwks : new ReceiptKeyring(jwks);
  const sig = keyring.checkSignature(r);
  if (sig !== null) reasons.push(`the receipt of batch ${r.batch}: ${sig}`);
  return verdict();
}
