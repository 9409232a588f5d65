/**
 * Settlement batches (`../settlement.ts` says what one is), written once for both databases:
 * the queue's reads (`pendingEndpoints`, `backlog`), `lastBatch`, and the batch commit, each
 * batch statement by statement in the settling transaction (`commit`), the ledger's own
 * `transfer` and `balance` booking it. PostgreSQL commits a group of batches with an engine of
 * its own (`pg/settlement-group.ts`), one statement per batch, reading the next batch while the
 * server writes the one before.
 */
import { COVERED_FAILURES } from '../../../protocol/outcome';
import type { BatchView } from '../../../protocol/settlement';
import { sql, type Conn } from '../conn';
import {
  HOUR_MS,
  batchView,
  type BatchRow,
  type Economics,
  type NextBatch,
  type Planner,
  type SettlementTable,
  type SettlingReceipts,
  type UnsettledCall,
} from '../settlement';
import {
  GroupRun,
  batchFigures,
  batchLeaves,
  batchTransfers,
  checkMarked,
  notPending,
  pendingOrder,
  plannedKeys,
} from '../settlement-plan';
import type { KeyAccounts } from './keys';
import { balance, transfer } from './ledger';

/**
 * `e(id)`: the distinct endpoints in the settler's queue (a null row ends them), one index seek
 * per endpoint instead of a scan of the backlog. It walks from the last: on PostgreSQL, entries
 * a batch deleted stay in the index until a vacuum, and they are an endpoint's oldest, so a walk
 * from the first would step over every one of them.
 */
export const PENDING_ENDPOINTS = `WITH RECURSIVE e(id) AS (
  SELECT (SELECT max(endpoint_id) FROM unsettled_outcomes)
  UNION ALL
  SELECT (SELECT max(endpoint_id) FROM unsettled_outcomes WHERE endpoint_id < e.id) FROM e WHERE e.id IS NOT NULL)`;

/** The columns of a `settled_calls` row, in the order the settlement's INSERTs give them. */
export const SETTLED_COLUMNS =
  'call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp';

const COVERED = [...COVERED_FAILURES].map((o) => `'${o}'`).join(', ');

/**
 * The standard amounts of a queued call (`q`) in SQL, from the batch's standard premium and
 * refund owed (the BIGINT parameters named `premium` and `owed`, written by `param`): premium
 * on an `ok` call with a key, the refund owed paid in full on a covered failure with a key,
 * nothing else (`settlement-plan.ts` `standardAmounts` is the same rule for the leaves). One
 * expression per column: premium, refund, refund_owed, clamp.
 */
export function standardAmountColumns(param: (name: 'premium' | 'owed') => string): [string, string, string, string] {
  const owed = `CASE WHEN q.key_id IS NOT NULL AND q.outcome IN (${COVERED}) THEN ${param('owed')} ELSE 0 END`;
  return [`CASE WHEN q.key_id IS NOT NULL AND q.outcome = 'ok' THEN ${param('premium')} ELSE 0 END`, owed, owed, 'NULL'];
}

export const ZERO_ECONOMICS: Economics = {
  price: 0,
  premium: 0,
  refund_cap_per_hour: 0,
  refund_cap_per_call: 0,
  refund_cap_per_batch: 0,
  treasury_fee_bps: 0,
};

/**
 * How the settler's statements are planned on PostgreSQL: with no sequential and no bitmap
 * scans, on its reader (`READER_SETTINGS`, for the session) and in its transactions
 * (`PLANNING`, first in each). Everything they read is a seek in an index: the walk's heads, an
 * endpoint's economics, a batch's calls read in the queue index's order up to its cap, and the
 * range of the queue a batch deletes. The planner, left to its estimates, gets the queue wrong
 * two ways:
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

/** `SETTLER_PLANNING` for the rest of a transaction: the first statement of each settling one (PostgreSQL only). */
export const PLANNING = sql(
  `SELECT ${Object.entries(SETTLER_PLANNING)
    .map(([name, value]) => `set_config('${name}', '${value}', true)`)
    .join(', ')}`,
);

/** Run `PLANNING` on `c`, on PostgreSQL. */
export const planning = async (c: Conn): Promise<void> => void (c.dialect === 'pg' && (await c.run(PLANNING)));

/** The endpoints pending at `boundary`, oldest head first, as `c` sees the queue. */
async function pendingOn(c: Conn, boundary: number): Promise<string[]> {
  await planning(c);
  return pendingOrder(await c.all<{ id: string; head: number | null }>(Q.pending), boundary);
}

/** The head of endpoint `e.id`'s queue: the oldest entry's `received_at`. */
const HEAD = `(SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id ORDER BY q.received_at, q.call_id LIMIT 1)`;

export const Q = {
  pending: sql(`${PENDING_ENDPOINTS} SELECT e.id, ${HEAD} AS head FROM e WHERE e.id IS NOT NULL`),
  // The backlog is read outside the settler's transactions (status, metrics), so planned at
  // each execution (`SqlOptions.replan`) rather than under `SETTLER_PLANNING`.
  backlog: sql(`SELECT count(*) FROM unsettled_outcomes`, { replan: true }),
  // The oldest head among the endpoints: an index seek per endpoint, not a scan of the backlog.
  oldest: sql(`${PENDING_ENDPOINTS} SELECT min(${HEAD}) FROM e WHERE e.id IS NOT NULL`, { replan: true }),
  lastBatch: sql(`SELECT * FROM settlement_batches ORDER BY id DESC LIMIT 1`),
  calls: sql(
    `SELECT call_id, key_id, outcome, started_at, received_at, reserved, uncovered FROM unsettled_outcomes
     WHERE endpoint_id = ? AND received_at <= ? ORDER BY received_at, call_id LIMIT ?`,
  ),
  economics: sql(
    `SELECT price, premium, refund_cap_per_hour, refund_cap_per_call, refund_cap_per_batch, treasury_fee_bps FROM endpoints WHERE id = ?`,
  ),
  hours: sql(`SELECT hour, refunds FROM refund_hours WHERE endpoint_id = ? AND hour BETWEEN ? AND ?`),
  addHour: sql(
    `INSERT INTO refund_hours (endpoint_id, hour, refunds) VALUES (?, ?, ?)
     ON CONFLICT (endpoint_id, hour) DO UPDATE SET refunds = refund_hours.refunds + excluded.refunds`,
  ),
  // Batch ids are `max(id) + 1` onwards, read inside the settling transaction: receipts chain
  // batches 1, 2, 3 … without a gap, which a sequence cannot promise.
  batch: sql(
    `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
     VALUES ((SELECT coalesce(max(id), 0) + 1 FROM settlement_batches), ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  ),
  exception: sql(
    `INSERT INTO settled_calls (${SETTLED_COLUMNS})
     SELECT call_id, CAST(@batch AS BIGINT), endpoint_id, key_id, outcome, started_at, received_at, CAST(@premium AS BIGINT),
            CAST(@refund AS BIGINT), CAST(@refund_owed AS BIGINT), CAST(@clamp AS TEXT)
     FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND received_at = @received_at AND call_id = @call_id`,
  ),
  dequeueOne: sql(`DELETE FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND received_at = @received_at AND call_id = @call_id`),
  // Everything else in the batch in one statement: the queue's rows up to the last selected
  // one in settlement order are exactly the selected ones less the exceptions, already
  // dequeued (the order is total; the transaction holds).
  standard: sql(
    `INSERT INTO settled_calls (${SETTLED_COLUMNS})
     SELECT q.call_id, CAST(@batch AS BIGINT), q.endpoint_id, q.key_id, q.outcome, q.started_at, q.received_at,
            ${standardAmountColumns((p) => `CAST(@${p} AS BIGINT)`).join(', ')}
     FROM unsettled_outcomes q WHERE q.endpoint_id = @endpoint AND (q.received_at, q.call_id) <= (@received_at, @call_id)`,
  ),
  dequeue: sql(`DELETE FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND (received_at, call_id) <= (@received_at, @call_id)`),
};

/** A row of `Q.calls`, as an array: its columns in their order. */
type CallColumns = [string, string | null, UnsettledCall['outcome'], number, number, number | null, number];

/**
 * `Q.calls`' rows as calls. Read as arrays and made into objects of one shape here: on SQLite
 * the read, a third of a batch's time, takes about a tenth less than with the driver's own row
 * objects (bench/README.md, "What a CHECK constraint cost SQLite settlement").
 */
function callsOf(rows: CallColumns[]): UnsettledCall[] {
  const calls = new Array<UnsettledCall>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [call_id, key_id, outcome, started_at, received_at, reserved, uncovered] = rows[i]!;
    calls[i] = { call_id, key_id, outcome, started_at, received_at, reserved, uncovered };
  }
  return calls;
}

/**
 * Settle up to `cap` of `endpointId`'s oldest unsettled outcomes received at or before
 * `boundary` as one batch, in the settling transaction `c`: the batch row, its calls' rows and
 * queue entries, its transfers, the hourly tallies and its receipt. Null when there was
 * nothing to settle.
 */
async function commit(
  c: Conn,
  receipts: SettlingReceipts,
  endpointId: string,
  boundary: number,
  cap: number,
  at: number,
  planner: Planner,
  keyAccounts: KeyAccounts,
): Promise<BatchView | null> {
  const calls = callsOf(await c.raw<CallColumns>(Q.calls, [endpointId, boundary, cap]));
  if (calls.length === 0) return null;
  const economics = (await c.get<Economics>(Q.economics, [endpointId])) ?? ZERO_ECONOMICS;
  const hours = calls.map((call) => Math.floor(call.started_at / HOUR_MS));
  const refunded = new Map(await c.raw<[number, number]>(Q.hours, [endpointId, Math.min(...hours), Math.max(...hours)]));
  const plan = planner({
    endpointId,
    calls,
    economics,
    pool: await balance(c, 'pool'),
    refundedInHour: (hour) => refunded.get(hour) ?? 0,
  });
  const f = batchFigures(calls.length, plan);
  const values = [endpointId, at, f.calls, f.premiums, f.treasury_fees, f.refunds, f.refunds_owed, f.clamped_calls];
  const batch = (await c.get<BatchRow>(Q.batch, values))!;
  // The receipt's tree is computed (on the hasher's thread, on SQLite) while the rows are written.
  const core = receipts.core;
  const tree = receipts.enabled ? core.startTree(batchLeaves(batch, core.provider(endpointId), calls, plan, core)) : null;

  if (plan.exceptions.size > 0) {
    const receivedAt = new Map(calls.map((call) => [call.call_id, call.received_at]));
    for (const [callId, a] of plan.exceptions) {
      const spot = { endpoint: endpointId, received_at: receivedAt.get(callId) ?? -1, call_id: callId };
      if ((await c.run(Q.exception, { batch: batch.id, ...a, ...spot })) !== 1) throw notPending(callId);
      await c.run(Q.dequeueOne, spot);
    }
  }
  const end = calls[calls.length - 1]!;
  const range = { endpoint: endpointId, received_at: end.received_at, call_id: end.call_id };
  const standard = await c.run(Q.standard, { batch: batch.id, premium: plan.standard.premium, owed: plan.standard.owed, ...range });
  checkMarked(calls.length, standard + plan.exceptions.size);
  checkMarked(calls.length - plan.exceptions.size, await c.run(Q.dequeue, range));

  // Premiums first, then the fee, then refunds: the pool only grows until the refunds. Each
  // key's postings go to its account; the accounts of keys not met before are read first.
  await keyAccounts.fill(c, plannedKeys(plan));
  for (const t of batchTransfers(plan, batch.id, at, (keyId) => keyAccounts.of(keyId))) await transfer(c, t);
  for (const [hour, amount] of plan.refundsByHour) if (amount > 0) await c.run(Q.addHour, [endpointId, hour, amount]);
  if (tree !== null) await receipts.append(batch, tree, calls.length);
  return batchView(batch);
}

export class SqlSettlementTable implements SettlementTable {
  /**
   * @param receipts The receipts family on a connection: the settling transaction's.
   * @param groups A group commit of the store's own (PostgreSQL's), or null: groups are
   *   committed batch by batch as `settleBatch` commits one.
   * @param keyAccounts Each key's account, the store's one map (every transaction's tables share it).
   */
  constructor(
    private readonly conn: Conn,
    private readonly receipts: (conn: Conn) => SettlingReceipts,
    private readonly groups: Pick<SettlementTable, 'settleGroup'> | null,
    private readonly keyAccounts: KeyAccounts,
  ) {}

  pendingEndpoints(boundary: number): Promise<string[]> {
    return this.conn.tx((c) => pendingOn(c, boundary), 'read');
  }

  settleBatch(endpointId: string, boundary: number, cap: number, at: number, plan: Planner): Promise<BatchView | null> {
    return this.conn.tx(async (c) => {
      await planning(c);
      return commit(c, this.receipts(c), endpointId, boundary, cap, at, plan, this.keyAccounts);
    }, 'serial');
  }

  settleGroup(next: NextBatch, boundary: number, at: number, plan: Planner, budgetCalls: number): Promise<BatchView[]> {
    if (this.groups !== null) return this.groups.settleGroup(next, boundary, at, plan, budgetCalls);
    return this.conn.tx(async (c) => {
      const run = new GroupRun(next, budgetCalls);
      const receipts = this.receipts(c);
      for (let step = run.step(); step !== null; step = run.step()) {
        if (step === 'round') run.startRound(await pendingOn(c, boundary));
        else run.committed(await commit(c, receipts, step.endpointId, boundary, step.cap, at, plan, this.keyAccounts));
      }
      return run.made;
    }, 'serial');
  }

  async backlog(): Promise<{ count: number; oldest_received_at: number | null }> {
    const count = (await this.conn.value<number>(Q.backlog))!;
    return { count, oldest_received_at: (await this.conn.value<number | null>(Q.oldest)) ?? null };
  }

  async lastBatch(): Promise<BatchView | null> {
    const row = await this.conn.get<BatchRow>(Q.lastBatch);
    return row === undefined ? null : batchView(row);
  }
}
