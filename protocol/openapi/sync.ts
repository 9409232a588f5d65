/**
 * The machine side of control's listener: the sync API gateways use under `/_sync/v1/` (sync
 * token) and control's `/metrics` (metrics token). Part of control's document (`admin.ts`).
 */
import type { ErrorCode } from '../errors';
import { BudgetAnswer, BudgetRequest } from '../budgets';
import { OutcomeAck, OutcomeBatch } from '../outcome';
import { StreamLine, StreamQuery, SyncAck, SyncAckAnswer } from '../snapshot';
import type { Operation } from './operation';
import { BODY_ERRORS, EDGE_ERRORS, STORE_ERRORS } from './common';

/** Every sync and metrics operation reads or writes the database. */
const SYNC_ERRORS: readonly ErrorCode[] = [...EDGE_ERRORS, 'svc_unauthorized', ...STORE_ERRORS];

export const SYNC_OPERATIONS: readonly Operation[] = [
  {
    method: 'get',
    path: '/_sync/v1/stream',
    operationId: 'syncStream',
    summary: 'The snapshot stream a gateway holds open',
    description:
      "Newline-delimited JSON: a full snapshot (`snapshot_begin`, `keys`…, `snapshot_end` with the SHA-256 of the lines before it) or the deltas since the version the gateway holds, then each change as a sealed `delta`, a `ping` every 10 s (three times per `sync.leaseS` when that is shorter), answered with a lease renewal, and a `beat` every `X-Svc-Beat-Ms` (2 s), not answered: a gateway that hears nothing for 3 beats takes control for hung and moves to the next. A `share` line, this gateway's share of every key's limit, comes first and again whenever control re-divides the limits; it may fall between the lines of a snapshot.",
    tag: 'sync',
    security: ['syncToken'],
    query: StreamQuery,
    answers: [
      {
        status: 200,
        description: 'One stream line per JSON line',
        content: { type: 'application/x-ndjson', schema: StreamLine, description: 'each line' },
        requiredHeaders: ['X-Svc-Beat-Ms'],
      },
    ],
    errors: SYNC_ERRORS,
  },
  {
    method: 'post',
    path: '/_sync/v1/ack',
    operationId: 'syncAck',
    summary: 'Ack (or nack) a state version, or renew the lease (`renew: true`, the answer to each ping)',
    tag: 'sync',
    security: ['syncToken'],
    body: { schema: SyncAck },
    answers: [{ status: 200, description: 'Taken', json: { SyncAckAnswer } }],
    errors: [...SYNC_ERRORS, ...BODY_ERRORS, 'svc_conflict'],
  },
  {
    method: 'post',
    path: '/_sync/v1/outcomes',
    operationId: 'syncOutcomes',
    summary: 'Ship a batch of outcome records (at most 10,000; 16 MiB)',
    description: 'Answered only after the batch is committed; records are stored idempotently by `call_id`.',
    tag: 'sync',
    security: ['syncToken'],
    body: { schema: OutcomeBatch },
    answers: [{ status: 200, description: 'Every record of the batch is held by control', json: { OutcomeAck } }],
    errors: [...SYNC_ERRORS, ...BODY_ERRORS],
  },
  {
    method: 'post',
    path: '/_sync/v1/budgets',
    operationId: 'syncBudgets',
    summary: "Exchange a gateway instance's prepaid budgets: give back, ask, learn what to give back",
    description:
      'A gateway process (`instance`) reports what it gave back of each account it holds (`held[].returned`, cumulative), asks for budget (`want[]`, with what a waiting call needs), and once after a start says its journal is `drained` (the escrows of its earlier instances are then released). The answer names, for every account asked, held or wanted back by another instance, the cumulative `granted` and what to give back (`ask`). Control grants only from the account\'s free money: see docs/money.md, "Prepaid endpoints".',
    tag: 'sync',
    security: ['syncToken'],
    body: { schema: BudgetRequest },
    answers: [{ status: 200, description: 'Returns recorded, grants made', json: { BudgetAnswer } }],
    errors: [...SYNC_ERRORS, ...BODY_ERRORS],
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getControlMetrics',
    summary: 'Prometheus metrics of control',
    tag: 'metrics',
    security: ['metricsToken'],
    answers: [
      {
        status: 200,
        description: 'Prometheus text exposition format 0.0.4',
        content: { type: 'text/plain; version=0.0.4; charset=utf-8' },
      },
    ],
    errors: SYNC_ERRORS,
  },
];
