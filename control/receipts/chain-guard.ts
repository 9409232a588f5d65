/**
 * The receipt chain as this control verified it (docs/design.md §11). Control serves receipts on
 * the consistency read and signs checkpoints over the chain's head; the database could have been
 * changed under it (a receipt edited, swapped, deleted, or rewritten and signed again with the
 * key from the data dir). Before either, the guard verifies the chain as far as the head, every
 * receipt as a verifier would (well formed, numbered without gaps, `prev` the hash of the one
 * before, signed by a published key), and remembers the hash of each receipt it verified:
 *
 * - incrementally: each check reads the receipts after the newest one verified, plus that one
 *   again (it must still hash to what was verified, so a chain rewritten and re-chained up to
 *   the head is caught); the first check after start walks the whole chain. Cost: one Ed25519
 *   verification and one SHA-256 per new receipt, once; 32 bytes of memory per receipt;
 * - each receipt served on the consistency read must hash to the hash remembered for its batch:
 *   one SHA-256 each, so a receipt changed after it was verified is never served.
 *
 * A failure breaks the chain for this process: the checkpoint and the consistency read answer
 * 503 `svc_receipts_unverified`, and the settler halts (`settler/settler.ts`), naming the batch in
 * `settler status`, `status`, the status page and the indexer's pages. It stays broken until
 * control restarts (on a database restored from a backup). A batch without its receipt only
 * stops the walk short of the head (the settler's own halt covers it) until it is re-signed.
 * What the guard cannot see: a change made while control was stopped, to a chain that still
 * verifies (rewritten and signed again with the key); a saved checkpoint is what catches that
 * (`verifyConsistency`).
 */
import type { Logger } from '../../runtime/log';
import type { Receipt, ReceiptJwks } from '../../protocol/receipts';
import { GENESIS_PREV, ReceiptKeyring, receiptHash, receiptShapeProblem } from '../../protocol/receipts-verify';

/** Where the guard reads the chain: the store's receipts. */
export interface ChainSource {
  /** Up to `limit` receipts after batch `after`, ascending. */
  page(after: number, limit: number): Promise<Receipt[]>;
  jwks(): Promise<ReceiptJwks>;
}

/** Where the chain stopped verifying, and why. */
export interface ChainBreak {
  batch: number;
  reason: string;
}

/** Receipts read per page while walking. @default 1000 */
export const CHAIN_GUARD_PAGE = 1_000;
const HASH_BYTES = 32;

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class ReceiptChainGuard {
  readonly #source: ChainSource;
  readonly #log: Logger;
  /** The hash of batch b's receipt at (b − 1) × 32, for b up to `#through`. */
  #hashes = Buffer.alloc(HASH_BYTES * 1024);
  #through = 0;
  #keyring: ReceiptKeyring | null = null;
  #broken: ChainBreak | null = null;
  /** Checks run one at a time; a caller arriving during one waits for the next. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Signatures verified since start: the cost of the checks so far. */
  signaturesChecked = 0;

  constructor(source: ChainSource, log: Logger) {
    this.#source = source;
    this.#log = log;
  }

  /** The newest batch verified. */
  get through(): number {
    return this.#through;
  }

  /** Where the chain broke, or null while it verifies. */
  get broken(): ChainBreak | null {
    return this.#broken;
  }

  /** Verify the receipts appended since the last check; the break, or null. */
  advance(): Promise<ChainBreak | null> {
    const run = this.#queue.then(() => this.#advance());
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Whether each of `receipts` is the one verified for its batch (after verifying what was
   * appended since): null when they all are; else why not (a receipt changed since it was
   * verified also breaks the chain).
   */
  async vouch(receipts: readonly Receipt[]): Promise<string | null> {
    const newest = receipts.reduce((n, r) => Math.max(n, r.batch), 0);
    if (newest > this.#through || this.#broken !== null) {
      const broken = await this.advance();
      if (broken !== null) return broken.reason;
    }
    for (const r of receipts) {
      if (r.batch > this.#through) return `batch ${r.batch}: the chain does not verify up to it yet (a batch before it has no receipt)`;
      const hashed = receiptHash(r);
      const known = this.#hashAt(r.batch);
      if (hashed !== known) {
        return this.#break(
          r.batch,
          `batch ${r.batch}: the receipt changed after control verified it (its hash was ${known}, it is ${hashed} now)`,
        ).reason;
      }
    }
    return null;
  }

  async #advance(): Promise<ChainBreak | null> {
    if (this.#broken !== null) return this.#broken;
    // The newest receipt verified is read again: it must still be the one verified.
    let after = Math.max(0, this.#through - 1);
    for (;;) {
      const page = await this.#source.page(after, CHAIN_GUARD_PAGE);
      if (this.#through > 0 && after === this.#through - 1) {
        const again = page[0];
        if (again?.batch !== this.#through) return this.#break(this.#through, `batch ${this.#through}: its receipt is gone`);
        const hashed = receiptHash(again);
        if (hashed !== this.#hashAt(this.#through))
          return this.#break(
            this.#through,
            `batch ${this.#through}: the receipt changed after control verified it (its hash was ${this.#hashAt(this.#through)}, it is ${hashed} now)`,
          );
      }
      for (const r of page) {
        if (r.batch <= this.#through) continue;
        // A batch without its receipt: the settler's halt names it; the walk waits for its reissue.
        if (r.batch > this.#through + 1 && receiptShapeProblem(r) === null) return null;
        const problem = await this.#verify(r);
        if (problem !== null) return this.#break(r.batch, problem);
        this.#remember(r.batch, receiptHash(r));
      }
      const last = page[page.length - 1];
      if (page.length < CHAIN_GUARD_PAGE || last === undefined) return null;
      after = last.batch;
      await yieldToEventLoop();
    }
  }

  /** Why `r`, the receipt after the newest verified, does not extend the chain; null when it does. */
  async #verify(r: Receipt): Promise<string | null> {
    const shape = receiptShapeProblem(r);
    if (shape !== null) return `batch ${r.batch}: malformed receipt (${shape})`;
    const prev = this.#through === 0 ? GENESIS_PREV : this.#hashAt(this.#through);
    if (r.batch !== this.#through + 1) return `batch ${r.batch}: out of order after batch ${this.#through}`;
    if (r.prev !== prev) return `batch ${r.batch}: prev does not link to the receipt of batch ${r.batch - 1}`;
    // A key published since the last read (a rotation) is read again once.
    if (this.#keyring === null || !this.#keyring.has(r.kid)) this.#keyring = new ReceiptKeyring(await this.#source.jwks());
    this.signaturesChecked++;
    const sig = this.#keyring.checkSignature(r);
    return sig === null ? null : `batch ${r.batch}: ${sig}`;
  }

  #hashAt(batch: number): string {
    return this.#hashes.toString('hex', (batch - 1) * HASH_BYTES, batch * HASH_BYTES);
  }

  #remember(batch: number, hex: string): void {
    if (batch * HASH_BYTES > this.#hashes.length) {
      const grown = Buffer.alloc(this.#hashes.length * 2);
      this.#hashes.copy(grown);
      this.#hashes = grown;
    }
    this.#hashes.write(hex, (batch - 1) * HASH_BYTES, HASH_BYTES, 'hex');
    this.#through = batch;
  }

  #break(batch: number, reason: string): ChainBreak {
    this.#broken ??= { batch, reason: `the receipt chain does not verify: ${reason}` };
    this.#log.error('receipt chain does not verify', { batch: this.#broken.batch, reason: this.#broken.reason });
    return this.#broken;
  }
}
