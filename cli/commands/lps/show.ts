/** `svcctl lps show NAME|ID`: one provider's position, its withdrawals and its share events (newest first). */
import type { LpDetail, ShareEventView } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { formatUnits } from '../../money';
import { table } from '../../output';
import { lpLines, withdrawalsTable } from './render';

function eventsTable(events: readonly ShareEventView[]): string {
  return table(
    ['ID', 'KIND', 'SHARES', 'AMOUNT', 'CAPITAL BEFORE', 'SHARES BEFORE', 'TRANSFER', 'WITHDRAWAL', 'AT'],
    events.map((e) => [
      e.id,
      e.kind,
      e.shares > 0 ? `+${e.shares}` : e.shares,
      formatUnits(e.amount),
      formatUnits(e.capital_before),
      e.shares_before,
      e.transfer_id,
      e.withdrawal_id,
      e.at,
    ]),
  );
}

export async function run(opts: { name: string; json?: boolean }, deps: Deps): Promise<number> {
  const detail = await deps.client.get<LpDetail>(`/_admin/v1/lps/${encodeURIComponent(opts.name)}`);
  if (opts.json) {
    deps.out.json(detail);
    return EXIT_OK;
  }
  for (const line of lpLines(detail)) deps.out.line(line);
  deps.out.line();
  deps.out.line(detail.withdrawals.length === 0 ? 'No withdrawals.' : `Withdrawals:\n${withdrawalsTable(detail.withdrawals)}`);
  deps.out.line();
  deps.out.line(detail.events.length === 0 ? 'No share events.' : `Share events:\n${eventsTable(detail.events)}`);
  return EXIT_OK;
}
