/**
 * `svcctl pool show`: the pool, what it took in and paid out, the refunds it could not pay, and
 * its capital: what it may owe (exposure), what of it is locked and free, and who owns it in
 * shares (docs/money.md).
 */
import type { PoolView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { money } from '../../money';
import { capitalLines } from '../lps/render';

export function poolLines(p: PoolView): string[] {
  return [
    `pool:            ${money(p.pool)}`,
    `treasury:        ${money(p.treasury)}`,
    `funded:          ${money(p.funded)}`,
    `withdrawn:       ${money(p.withdrawn)} (paid to liquidity providers)`,
    `premiums:        ${money(p.premiums)} (treasury fees ${money(p.treasury_fees)})`,
    `refunds paid:    ${money(p.refunds)} of ${money(p.refunds_owed)} owed`,
    `shortfall:       ${money(p.shortfall)} (${p.clamped.pool_depleted} calls pool_depleted, ${p.clamped.cap_clamped} cap_clamped, ` +
      `${p.clamped.batch_capped} batch_capped, ${p.clamped.call_capped} call_capped)`,
    `owed to keys:    ${money(p.owed_to_keys)} (paid out ${money(p.paid_out)})`,
    `settled:         ${p.settled_calls} calls in ${p.settled_batches} batches; ${p.backlog} waiting`,
    `coverage:        ${p.manual_pause ? 'paused by an operator' : 'on'}`,
    ...capitalLines(p.capital),
  ];
}

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const pool = await deps.client.get<PoolView>('/_admin/v1/pool');
  if (opts.json) deps.out.json(pool);
  else for (const line of poolLines(pool)) deps.out.line(line);
  return EXIT_OK;
}
