/**
 * The chain guard (control/receipts/chain-guard.ts) against receipts tampered with by direct SQL,
 * on both stores. A settled install's chain is verified once (the state a running control
 * holds), then edited as someone with the database (and, for some edits, the data dir's signing
 * key) could; each edit is undone before the next:
 *
 * | edit | a guard that verified before | a guard starting after the edit |
 * |---|---|---|
 * | a receipt changed, not re-signed | serving it: changed since verified | its signature |
 * | two receipts swapped | serving them: changed since verified | the first one's link or signature |
 * | a receipt changed and re-signed with the key | serving it: changed since verified | the next one's `prev` |
 * | the chain rewritten from a receipt up to the head, re-signed | the next check: the head changed | passes (a saved checkpoint catches it) |
 * | a receipt after the head forged with another key | its signature | its signature |
 * | a receipt deleted | the walk stops short of it, no break (the settler's own halt) | the same |
 *
 * A check costs only the receipts added since the last one (counted in signatures verified).
 */
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateKey } from 'node:crypto';
import { ReceiptChainGuard } from '../../control/receipts/chain-guard';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import type { Store } from '../../control/store';
import { silentLogger } from '../../runtime/log';
import type { Receipt } from '../../protocol/receipts';
import { receiptHash } from '../../protocol/receipts-verify';
import { T0, all, records, seed, settle } from '../fixtures/receipts';
import { newInstall, openInstall, rawQuery, type Install } from '../fixtures/store-sql';
import { forEachStore } from '../fixtures/stores';
import { chainOf, newKey, rechain, signedBy } from '../fixtures/receipt-chain';

const COLUMNS = ['v', 'prev', 'root', 'tree_size', 'refunds', 'premiums', 'settled_at', 'kid', 'sig'] as const;

/** Write `r` over the row of batch `batch` (every column but `batch`). */
function overwrite(at: Install, batch: number, r: Receipt): Promise<unknown> {
  return rawQuery(at, `UPDATE receipts SET ${COLUMNS.map((c) => `${c} = ?`).join(', ')} WHERE batch = ?`, [
    ...COLUMNS.map((c) => r[c]),
    batch,
  ]);
}

interface Case {
  name: string;
  edit: (chain: readonly Receipt[]) => Promise<unknown>;
  /** What the guard that verified the chain before finds, and at which batch. */
  verified: { batch: number; reason: RegExp } | null;
  /** What a guard starting after the edit finds; null: nothing. */
  fresh: { batch: number; reason: RegExp } | null;
}

async function settledInstall(t: Test, kind: 'sqlite' | 'postgres'): Promise<{ at: Install; store: Store; chain: Receipt[] }> {
  const at = await newInstall(t, kind);
  const store = await openInstall(t, at);
  await seed(store);
  await store.outcomes.ingest(records(200), T0);
  t.ok((await settle(store)) >= 6, 'six batches or more');
  return { at, store, chain: await all(store) };
}

t.test('the first walk after start, and the next check, on a chain of 10 000 receipts', async (t) => {
  const key = newKey();
  const chain = chainOf(10_000, key);
  let reads = 0;
  const source = {
    page: (after: number, limit: number) => {
      reads++;
      return Promise.resolve(chain.slice(after, after + limit));
    },
    jwks: () => Promise.resolve({ keys: [key.jwk] }),
  };
  const guard = new ReceiptChainGuard(source, silentLogger);
  let started = process.hrtime.bigint();
  t.equal(await guard.advance(), null);
  const firstMs = Number(process.hrtime.bigint() - started) / 1e6;
  t.equal(guard.signaturesChecked, 10_000);
  t.equal(reads, 11, 'ten pages of 1000 and the empty one after');
  started = process.hrtime.bigint();
  t.equal(await guard.vouch(chain.slice(9_000)), null);
  const vouchMs = Number(process.hrtime.bigint() - started) / 1e6;
  t.equal(guard.signaturesChecked, 10_000, 'vouching for served receipts verifies no signature again');
  t.comment(
    `chain guard, 10000 receipts: first walk ${firstMs.toFixed(0)} ms (${reads} reads), 1000 served receipts vouched for in ${vouchMs.toFixed(1)} ms`,
  );
});

forEachStore(t, (t, kind) => {
  t.test('every tampering with the receipts is caught before a checkpoint or a consistency read', async (t) => {
    const { at, store, chain } = await settledInstall(t, kind);
    const head = chain.length;
    // The data dir's signing key, and another key that claims its kid.
    const key = { priv: createPrivateKey(readFileSync(join(at.dataDir, RECEIPT_KEY_FILE), 'utf8')), jwk: { kid: chain[0]!.kid } };
    const stranger = { priv: newKey().priv, jwk: key.jwk };

    // The walk: every receipt once; the next check only what was added since.
    const guard = new ReceiptChainGuard(store.receipts, silentLogger);
    t.equal(await guard.advance(), null, 'the untouched chain verifies');
    t.equal(guard.through, head);
    t.equal(guard.signaturesChecked, head, `the first check verifies all ${head} signatures`);
    t.equal(await guard.advance(), null);
    t.equal(guard.signaturesChecked, head, 'a check with nothing new verifies no signature');
    t.equal(await guard.vouch(chain), null, 'the chain as verified is vouched for');

    const cases: Case[] = [
      {
        name: 'batch 3 changed, not re-signed',
        edit: () => overwrite(at, 3, { ...chain[2]!, refunds: chain[2]!.refunds + 1 }),
        verified: { batch: 3, reason: /batch 3: the receipt changed after control verified it/ },
        fresh: { batch: 3, reason: /batch 3: the signature does not verify/ },
      },
      {
        name: 'batches 2 and 3 swapped',
        edit: async () => {
          await overwrite(at, 2, chain[2]!);
          await overwrite(at, 3, chain[1]!);
        },
        verified: { batch: 2, reason: /batch 2: the receipt changed after control verified it/ },
        fresh: { batch: 2, reason: /batch 2: prev does not link to the receipt of batch 1/ },
      },
      {
        name: 'batch 3 changed and re-signed with the key',
        edit: () => overwrite(at, 3, signedBy(key, { ...chain[2]!, refunds: chain[2]!.refunds + 1 })),
        verified: { batch: 3, reason: /batch 3: the receipt changed after control verified it/ },
        fresh: { batch: 4, reason: /batch 4: prev does not link to the receipt of batch 3/ },
      },
      {
        name: 'the chain rewritten from batch 3 to the head and re-signed with the key',
        edit: async () => {
          const rewritten = rechain([...chain.slice(0, 2), { ...chain[2]!, refunds: chain[2]!.refunds + 1 }, ...chain.slice(3)], 3, key);
          for (const r of rewritten.slice(2)) await overwrite(at, r.batch, r);
        },
        verified: { batch: head, reason: new RegExp(`batch ${head}: the receipt changed after control verified it`) },
        fresh: null,
      },
      {
        name: 'a receipt after the head forged with another key',
        edit: () =>
          rawQuery(
            at,
            `INSERT INTO receipts (batch, ${COLUMNS.join(', ')}) VALUES (?, ${COLUMNS.map(() => '?').join(', ')})`,
            ((r) => [head + 1, ...COLUMNS.map((c) => r[c])])(
              signedBy(stranger, { ...chain[head - 1]!, batch: head + 1, prev: receiptHash(chain[head - 1]!) }),
            ),
          ),
        verified: { batch: head + 1, reason: new RegExp(`batch ${head + 1}: the signature does not verify`) },
        fresh: { batch: head + 1, reason: new RegExp(`batch ${head + 1}: the signature does not verify`) },
      },
    ];

    for (const c of cases) {
      const verified = new ReceiptChainGuard(store.receipts, silentLogger);
      t.equal(await verified.advance(), null, `${c.name}: verified before`);
      await c.edit(chain);
      // The next check (what a checkpoint or a settler run does first), then serving every receipt.
      const vouched = (await verified.advance())?.reason ?? (await verified.vouch(await store.receipts.page(0, 1000)));
      if (c.verified === null) t.equal(vouched, null, `${c.name}: a guard that verified before`);
      else {
        t.match(vouched, c.verified.reason, `${c.name}: a guard that verified before refuses to serve it`);
        t.match(verified.broken, { batch: c.verified.batch }, `${c.name}: and breaks at batch ${c.verified.batch}`);
        t.match(await verified.advance(), { batch: c.verified.batch }, `${c.name}: broken until restart`);
      }
      const fresh = new ReceiptChainGuard(store.receipts, silentLogger);
      const found = await fresh.advance();
      if (c.fresh === null) t.equal(found, null, `${c.name}: a guard starting now cannot tell`);
      else t.match(found, { batch: c.fresh.batch, reason: c.fresh.reason }, `${c.name}: a guard starting now breaks at ${c.fresh.batch}`);
      // Undo the edit for the next case.
      await rawQuery(at, `DELETE FROM receipts WHERE batch > ?`, [head]);
      for (const r of chain) await overwrite(at, r.batch, r);
      t.equal(await new ReceiptChainGuard(store.receipts, silentLogger).advance(), null, `${c.name}: undone`);
    }

    // A receipt deleted: the walk stops short of it without breaking (the settler halts on the gap).
    await rawQuery(at, `DELETE FROM receipts WHERE batch = ?`, [4]);
    const gap = new ReceiptChainGuard(store.receipts, silentLogger);
    t.equal(await gap.advance(), null, 'a missing receipt is not a break');
    t.equal(gap.through, 3, 'the walk stops at the gap');
    t.match(await gap.vouch(await store.receipts.page(0, 1000)), /batch 5: the chain does not verify up to it yet/);
    t.equal(gap.broken, null);
  });

  t.test('a check costs the new receipts only', async (t) => {
    const { store, chain } = await settledInstall(t, kind);
    const guard = new ReceiptChainGuard(store.receipts, silentLogger);
    await guard.advance();
    const before = guard.signaturesChecked;
    await store.outcomes.ingest(records(40, 1_000), T0 + 1);
    const added = await settle(store);
    t.ok(added > 0);
    t.equal(await guard.advance(), null);
    t.equal(guard.through, chain.length + added);
    t.equal(guard.signaturesChecked - before, added, `${added} new receipts, ${added} signatures verified`);
  });
});
