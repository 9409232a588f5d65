/**
 * The statements of a PostgreSQL settling transaction (`settlement-group.ts` says what each
 * batch does with them), the settler's queue positions they take, and the parameters of a
 * batch's one write statement.
 */
import { HOUR_MS, SETTLED_COLUMNS, standardAmountColumns, type BatchRow, type BatchPlan, type UnsettledCall } from '../settlement';
import { pendingOrder } from '../settlement-plan';
import { NIL_CALL_ID } from '../../../protocol/outcome';
import type { TransferInput } from '../ledger-core';
import type { SignedReceipt } from '../receipts-core';
import { sql, type PgConn } from './conn';
import { BALANCE_CTES, TRANSFER_CTES, transferParams } from './ledger';

/** The standard amounts, column by column (`standardAmountColumns`), and the columns they fill. */
const STANDARD = standardAmountColumns((p) => `@std_${p}::bigint`);
const AMOUNTS = ['premium', 'refund', 'refund_owed', 'clamp'] as const;

/**
 * Before every queue entry in settlement order: no `received_at` (control's clock, in ms) is
 * that far in the past, and the nil UUID is the first call id.
 */
export const NOTHING_BEFORE: QueuePosition = { received_at: Number.MIN_SAFE_INTEGER, call_id: NIL_CALL_ID };

/**
 * How the settler's statements are planned: with no sequential and no bitmap scans, on its
 * reader (`READER_SETTINGS`, for the session) and in its transactions (`PLANNING`, first in
 * each). Everything they read is a seek in an index: the walk's heads, an endpoint's economics,
 * a batch's calls read in the queue index's order up to its cap, and the range of the queue a
 * batch deletes. The planner, left to its estimates, gets the queue wrong two ways:
 *
 * - A prepared statement keeps its plan until the table's statistics change. One made while
 *   the queue was empty (a vacuum truncates a drained queue to no pages) or held a handful of
 *   calls is a sequential scan, which reads the whole queue at every walk and batch of the
 *   burst that follows, until autovacuum analyzes the queue.
 * - Planned afresh, a batch's read picks the ordered read over collecting every match and
 *   sorting it only when it estimates many more matches than the cap. The queue's statistics
 *   lag a burst by an autovacuum cycle, and the calls past the run's position are newer than
 *   any statistics have seen, so it estimates a handful, and each batch would collect the
 *   endpoint's whole backlog: a drain would cost the backlog's square.
 *
 * Under these settings every plan of these statements seeks, whenever it is made, and they stay
 * prepared (planning them afresh at each batch cost about 4 % of settlement's time). A statement
 * a settling transaction shares with other callers (the receipts chain's reads, say) may be
 * planned under them on that pool connection, and keep that plan; what it reads there is a
 * keyed row too, which it seeks either way.
 */
const SETTLER_PLANNING = { enable_seqscan: 'off', enable_bitmapscan: 'off' } as const;

/** `SETTLER_PLANNING` as the settler's reader connects with it (node-postgres' `options`). */
export const READER_SETTINGS = Object.entries(SETTLER_PLANNING)
  .map(([name, value]) => `-c ${name}=${value}`)
  .join(' ');

/** `SETTLER_PLANNING` for the rest of a transaction: the first statement of each settling one. */
export const PLANNING = sql(
  `SELECT ${Object.entries(SETTLER_PLANNING)
    .map(([name, value]) => `set_config('${name}', '${value}', true)`)
    .join(', ')}`,
);

/** A place in the settler's queue of one endpoint. */
export interface QueuePosition {
  received_at: number;
  call_id: string;
}

/**
 * The endpoints in the settler's queue (a null row ends them), found as SQLite's
 * `PENDING_ENDPOINTS` finds them but from the last: one index seek per endpoint, each landing
 * on its newest entries. Entries a batch deleted stay in the index until a vacuum, and they are
 * an endpoint's oldest, so a walk from the first would step over every one of them.
 */
export const PG_PENDING_ENDPOINTS = `WITH RECURSIVE e(id) AS (
  SELECT (SELECT max(endpoint_id) FROM unsettled_outcomes)
  UNION ALL
  SELECT (SELECT max(endpoint_id) FROM unsettled_outcomes WHERE endpoint_id < e.id) FROM e WHERE e.id IS NOT NULL)`;

export const Q = {
  // Each endpoint with unsettled outcomes and when its oldest one was received: its oldest past
  // its cursor (`settledTo`, in the unnested arrays) when it has one.
  heads: sql(
    `${PG_PENDING_ENDPOINTS}
     SELECT e.id, (SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                     AND (q.received_at, q.call_id) > (coalesce(c.received_at, ${NOTHING_BEFORE.received_at}), coalesce(c.call_id, '${NIL_CALL_ID}'))
                   ORDER BY q.received_at, q.call_id LIMIT 1) AS head
     FROM e LEFT JOIN unnest(@cursor_endpoint::text[], @cursor_received_at::bigint[], @cursor_call_id::uuid[])
       AS c (endpoint_id, received_at, call_id) ON c.endpoint_id = e.id
     WHERE e.id IS NOT NULL`,
  ),
  pool: sql(`SELECT balance FROM account_balances WHERE account = 'pool'`),
  // A batch's calls in settlement order, each with what its endpoint already refunded in the
  // call's clock hour (null: nothing yet). The hour is floor(started_at / 1 h), as HOUR_MS.
  // `after`: the last call of the endpoint's batch before in the run (`NOTHING_BEFORE` for its
  // first), so the index scan starts past the entries that batch deleted instead of stepping
  // over them.
  calls: sql(
    `SELECT c.call_id, c.key_id, c.outcome, c.started_at, c.received_at, h.refunds
     FROM (SELECT call_id, key_id, outcome, started_at, received_at FROM unsettled_outcomes
           WHERE endpoint_id = @endpoint AND received_at <= @boundary
             AND (received_at, call_id) > (@after_received_at::bigint, @after_call_id::uuid)
           ORDER BY received_at, call_id LIMIT @cap) AS c
       LEFT JOIN refund_hours h ON h.endpoint_id = @endpoint
         AND h.hour = c.started_at / ${HOUR_MS} - CASE WHEN c.started_at % ${HOUR_MS} < 0 THEN 1 ELSE 0 END
     ORDER BY c.received_at, c.call_id`,
  ),
  economics: sql(`SELECT price, premium, refund_cap_per_hour, treasury_fee_bps FROM endpoints WHERE id = ?`),
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

/** A row of `Q.calls`: the call's columns, then its hour's refunds so far (null: none). */
export type CallRow = [string, string | null, UnsettledCall['outcome'], number, number, number | null];

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
