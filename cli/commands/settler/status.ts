/** `svcctl settler status | pause | resume`: the settler's state, backlog and last batch, the control that settles, and why it is halted. */
import type { SettlerHalt, SettlerStatus } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export function settlerLines(s: SettlerStatus): string[] {
  const last = s.last_batch;
  return [
    `state:       ${s.state}`,
    `cadence:     every ${s.cadence_ms} ms, up to ${s.batch_cap} calls per batch`,
    `backlog:     ${s.backlog} calls${s.lag_ms === null ? '' : ` (oldest received ${s.lag_ms} ms ago)`}`,
    `last run:    ${s.last_run_at ?? 'never'}`,
    `last batch:  ${last === null ? 'none' : `#${last.id} ${last.endpoint_id}: ${last.calls} calls, premiums ${last.premiums}, refunds ${last.refunds} at ${last.at}`}`,
    `leader:      ${s.leader === null ? 'none (a control takes the lease within settler.leaseS)' : `${s.leader.id} at ${s.leader.url}`}`,
    ...(s.last_error === null ? [] : [`last error:  ${s.last_error}`]),
    ...(s.halted === null ? [] : haltLines(s.halted)),
  ];
}

/** What a halted settler needs from the operator. */
export function haltLines(h: SettlerHalt): string[] {
  return [
    `halted:      ${h.reason}`,
    h.batches_without_receipt === 0
      ? '             settles and signs nothing, and the indexer serves no checkpoint, until the database is restored from a backup and control restarted'
      : `             settles and signs nothing until the database is restored from a backup, or: svcctl receipts reissue ${h.batch}`,
  ];
}

export function print(status: SettlerStatus, opts: { json?: boolean }, deps: Deps): number {
  if (opts.json) deps.out.json(status);
  else for (const line of settlerLines(status)) deps.out.line(line);
  return EXIT_OK;
}

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  return print(await deps.client.get<SettlerStatus>('/_admin/v1/settler'), opts, deps);
}
