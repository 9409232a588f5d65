/**
 * `svcctl pool show`: the pool, what it took in and paid out, the refunds it could not pay, and
 * its capital: what it may owe (exposure), what of it is locked and free, and who owns it in
 * shares (docs/money.md).
 */
import type { PoolCoverage } from '../../../protocol/lps';
import type { PoolView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { money } from '../../money';
import { capitalLines } from '../lps/render';

/** Whether the pool covers new calls, and why not. */
function coverageWords(c: PoolCoverage): string {
  const why = [
    ...(c.manual ? ['by an operator'] : []),
    ...(c.automatic ? [`free capital ${money(c.free)} is below its minimum ${money(c.min_free)}`] : []),
  ];
  return why.length === 0 ? 'on' : `paused (${why.join('; ')}): calls are admitted uncovered`;
}

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
    `coverage:        ${coverageWords(p.coverage)}`,
    ...capitalLines(p.capital),
  ];
}

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const pool = await deps.client.get<PoolView>('/_admin/v1/pool');
  if (opts.json) deps.out.json(pool);
  else for (const line of poolLines(pool)) deps.out.line(line);
  return EXIT_OK;
}
