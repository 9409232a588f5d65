/**
 * The statements of a PostgreSQL settling transaction (`settlement-group.ts` says what each
 * batch does with them), the settler's queue positions they take, and the parameters of a
 * batch's one write statement, transfers included (`TRANSFER_CTES`, `BALANCE_CTES`).
 */
import { HOUR_MS, type BatchRow, type BatchPlan, type UnsettledCall } from '../settlement';
import { pendingOrder } from '../settlement-plan';
import { NIL_CALL_ID } from '../../../protocol/outcome';
import type { TransferInput } from '../ledger';
import type { SignedReceipt } from '../receipts';
import { PENDING_ENDPOINTS, SETTLED_COLUMNS, standardAmountColumns } from '../sql/settlement';
import { sql, type PgConn } from './conn';

/** The standard amounts, column by column (`standardAmountColumns`), and the columns they fill. */
const STANDARD = standardAmountColumns((p) => `@std_${p}::bigint`);
const AMOUNTS = ['premium', 'refund', 'refund_owed', 'clamp'] as const;

/**
 * Before every queue entry in settlement order: no `received_at` (control's clock, in ms) is
 * that far in the past, and the nil UUID is the first call id.
 */
export const NOTHING_BEFORE: QueuePosition = { received_at: Number.MIN_SAFE_INTEGER, call_id: NIL_CALL_ID };

/**
 * The common table expressions that write transfers' rows (`transferParams`' parameters): one
 * row per transfer in input order (ids follow it: the rows are inserted sorted by `n`), and its
 * postings. `n` maps each posting to its transfer; `numbered` answers the ids. A settlement
 * batch writes its transfers with them inside its one statement (`Q.write` below),
 * and moves the balances once for its whole transaction (`BALANCE_CTES`).
 */
const TRANSFER_CTES = `input AS (
       SELECT * FROM unnest(@at::bigint[], @kind::text[], @call_id::uuid[], @batch_id::bigint[], @reference::text[], @actor::text[])
         WITH ORDINALITY AS i (at, kind, call_id, batch_id, reference, actor, n)),
     transfers AS (
       INSERT INTO ledger_transfers (at, kind, call_id, batch_id, reference, actor)
       SELECT at, kind, call_id, batch_id, reference, actor FROM input ORDER BY n
       RETURNING id),
     numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM transfers),
     postings AS (
       INSERT INTO ledger_postings (transfer_id, account, amount)
       SELECT t.id, p.account, p.amount
       FROM unnest(@posting_of::bigint[], @account::text[], @amount::bigint[]) AS p (n, account, amount) JOIN numbered t ON t.n = p.n)`;

/**
 * The common table expressions that move balances: each account in `@account` by the sum of
 * its `@amount`s (an account may repeat), its row created on its first move.
 */
const BALANCE_CTES = `moves AS (
       SELECT account, sum(amount)::bigint AS amount FROM unnest(@account::text[], @amount::bigint[]) AS m (account, amount)
       GROUP BY account),
     -- Not an upsert: the pool's CHECK (balance ≥ 0) would be tested on the would-be inserted row.
     updated AS (
       UPDATE account_balances b SET balance = b.balance + m.amount FROM moves m WHERE b.account = m.account
       RETURNING b.account),
     created AS (
       INSERT INTO account_balances (account, balance)
       SELECT account, amount FROM moves WHERE account NOT IN (SELECT account FROM updated))`;

/** `TRANSFER_CTES`' parameters for `inputs`: one array per column, the postings flattened with their transfer's position. */
function transferParams(inputs: readonly TransferInput[]) {
  const p = {
    at: [] as number[],
    kind: [] as string[],
    call_id: [] as (string | null)[],
    batch_id: [] as (number | null)[],
    reference: [] as (string | null)[],
    actor: [] as string[],
    posting_of: [] as number[],
    account: [] as string[],
    amount: [] as number[],
  };
  inputs.forEach((input, i) => {
    p.at.push(input.at);
    p.kind.push(input.kind);
    p.call_id.push(input.callId ?? null);
    p.batch_id.push(input.batchId ?? null);
    p.reference.push(input.reference ?? null);
    p.actor.push(input.actor);
    for (const posting of input.postings) {
      p.posting_of.push(i + 1);
      p.account.push(posting.account);
      p.amount.push(posting.amount);
    }
  });
  return p;
}

/** A place in the settler's queue of one endpoint. */
export interface QueuePosition {
  received_at: number;
  call_id: string;
}

export const Q = {
  // Each endpoint with unsettled outcomes and when its oldest one was received: its oldest past
  // its cursor (`settledTo`, in the unnested arrays) when it has one.
  heads: sql(
    `${PENDING_ENDPOINTS}
     SELECT e.id, (SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                     AND (q.received_at, q.call_id) > (coalesce(c.received_at, ${NOTHING_BEFORE.received_at}), coalesce(c.call_id, '${NIL_CALL_ID}'))
                   ORDER BY q.received_at, q.call_id LIMIT 1) AS head
     FROM e LEFT JOIN unnest(@cursor_endpoint::text[], @cursor_received_at::bigint[], @cursor_call_id::uuid[])
       AS c (endpoint_id, received_at, call_id) ON c.endpoint_id = e.id
     WHERE e.id IS NOT NULL`,
  ),
  // A batch's calls in settlement order, each with what its endpoint already refunded in the
  // call's clock hour (null: nothing yet). The hour is floor(started_at / 1 h), as HOUR_MS.
  // `after`: the last call of the endpoint's batch before in the run (`NOTHING_BEFORE` for its
  // first), so the index scan starts past the entries that batch deleted instead of stepping
  // over them.
  calls: sql(
    `SELECT c.call_id, c.key_id, c.outcome, c.started_at, c.received_at, h.refunds, c.reserved, c.uncovered
     FROM (SELECT call_id, key_id, outcome, started_at, received_at, reserved, uncovered FROM unsettled_outcomes
           WHERE endpoint_id = @endpoint AND received_at <= @boundary
             AND (received_at, call_id) > (@after_received_at::bigint, @after_call_id::uuid)
           ORDER BY received_at, call_id LIMIT @cap) AS c
       LEFT JOIN refund_hours h ON h.endpoint_id = @endpoint
         AND h.hour = c.started_at / ${HOUR_MS} - CASE WHEN c.started_at % ${HOUR_MS} < 0 THEN 1 ELSE 0 END
     ORDER BY c.received_at, c.call_id`,
  ),
  // What the group's transfers moved, once per account, at its end.
  balances: sql(`WITH ${BALANCE_CTES} SELECT count(*) FROM moves`),
  // A batch's writes in one statement (the file's header lists them). The queue's entries past
  // `after` up to the batch's last call in settlement order are its calls (the order is total;
  // the writer lock holds); `x` holds the plan's exceptions. Answers how many calls it settled,
  // and an exception it did not find in the queue, if any (the exceptions are distinct calls,
  // so with none missing every one of them was settled as an exception): a
  // call ingested into that range since the batch was read (its `received_at` older than calls
  // already queued: another control's clock behind) makes the count differ, and the group rolls
  // back and is settled again on the next run, that call with it.
  write: sql(
    `WITH ${TRANSFER_CTES},
     batch_row AS (
       INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
       VALUES (@batch, @endpoint, @created_at, @calls, @premiums, @treasury_fees, @refunds, @refunds_owed, @clamped_calls)),
     x AS (
       SELECT * FROM unnest(@x_call_id::uuid[], @x_premium::bigint[], @x_refund::bigint[], @x_refund_owed::bigint[], @x_clamp::text[])
         AS x (call_id, premium, refund, refund_owed, clamp)),
     q AS (
       DELETE FROM unsettled_outcomes
       WHERE endpoint_id = @endpoint AND (received_at, call_id) > (@after_received_at::bigint, @after_call_id::uuid)
         AND (received_at, call_id) <= (@last_received_at::bigint, @last_call_id::uuid)
       RETURNING *),
     settled AS (
       INSERT INTO settled_calls (${SETTLED_COLUMNS})
       SELECT q.call_id, @batch::bigint, q.endpoint_id, q.key_id, q.outcome, q.started_at, q.received_at,
         ${STANDARD.map((standard, i) => `CASE WHEN x.call_id IS NULL THEN ${standard} ELSE x.${AMOUNTS[i]} END`).join(', ')}
       FROM q LEFT JOIN x ON x.call_id = q.call_id
       RETURNING 1),
     hours AS (
       INSERT INTO refund_hours (endpoint_id, hour, refunds)
       SELECT @endpoint, hour, refunds FROM unnest(@hour::bigint[], @hour_refunds::bigint[]) AS h (hour, refunds)
       ON CONFLICT (endpoint_id, hour) DO UPDATE SET refunds = refund_hours.refunds + excluded.refunds),
     receipt AS (
       INSERT INTO receipts (batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig, subtrees)
       SELECT @batch, @r_v, @r_prev, @r_root, @r_tree_size, @refunds, @premiums, @r_settled_at, @r_kid, @r_sig, @r_subtrees
       WHERE @r_v::bigint IS NOT NULL)
     SELECT (SELECT count(*) FROM settled) AS settled,
            (SELECT x.call_id FROM x WHERE NOT EXISTS (SELECT 1 FROM q WHERE q.call_id = x.call_id) ORDER BY 1 LIMIT 1) AS missed`,
  ),
};

/**
 * A row of `Q.calls`: the call's columns, its hour's refunds so far (null: none), what it
 * reserved (null: none), and whether it was admitted uncovered (1).
 */
export type CallRow = [string, string | null, UnsettledCall['outcome'], number, number, number | null, number | null, number];

/** The parameters of `Q.write` for `batch`, planned by `plan`, its calls past `after` up to `last`. */
export function writeParams(
  batch: BatchRow,
  plan: BatchPlan,
  transfers: TransferInput[],
  hours: [number, number][],
  after: QueuePosition,
  last: QueuePosition,
  signed: SignedReceipt | null,
): Record<string, unknown> {
  const x = {
    x_call_id: [] as string[],
    x_premium: [] as number[],
    x_refund: [] as number[],
    x_refund_owed: [] as number[],
    x_clamp: [] as (string | null)[],
  };
  for (const [callId, a] of plan.exceptions) {
    x.x_call_id.push(callId);
    x.x_premium.push(a.premium);
    x.x_refund.push(a.refund);
    x.x_refund_owed.push(a.refund_owed);
    x.x_clamp.push(a.clamp);
  }
  const r = signed?.receipt;
  return {
    ...transferParams(transfers),
    batch: batch.id,
    endpoint: batch.endpoint_id,
    created_at: batch.created_at,
    calls: batch.calls,
    premiums: batch.premiums,
    treasury_fees: batch.treasury_fees,
    refunds: batch.refunds,
    refunds_owed: batch.refunds_owed,
    clamped_calls: batch.clamped_calls,
    ...x,
    after_received_at: after.received_at,
    after_call_id: after.call_id,
    last_received_at: last.received_at,
    last_call_id: last.call_id,
    std_premium: plan.standard.premium,
    std_owed: plan.standard.owed,
    hour: hours.map(([hour]) => hour),
    hour_refunds: hours.map(([, amount]) => amount),
    r_v: r?.v ?? null,
    r_prev: r?.prev ?? null,
    r_root: r?.root ?? null,
    r_tree_size: r?.tree_size ?? null,
    r_settled_at: r?.settled_at ?? null,
    r_kid: r?.kid ?? null,
    r_sig: r?.sig ?? null,
    r_subtrees: signed?.subtrees ?? null,
  };
}

/**
 * The endpoints pending at `boundary`, oldest head first, as `conn` sees the queue; an endpoint
 * with a cursor in `settledTo` is pending only with a call past it.
 */
export async function pendingOrderOf(
  c: PgConn,
  boundary: number,
  settledTo: ReadonlyMap<string, QueuePosition> = new Map(),
): Promise<string[]> {
  const cursors = [...settledTo];
  const heads = await c.all<{ id: string; head: number | null }>(Q.heads, {
    cursor_endpoint: cursors.map(([endpointId]) => endpointId),
    cursor_received_at: cursors.map(([, at]) => at.received_at),
    cursor_call_id: cursors.map(([, at]) => at.call_id),
  });
  return pendingOrder(heads, boundary);
}
