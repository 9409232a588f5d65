/** `svcctl gateways weight ID N`: weight a gateway in the split of key limits (shares follow the weights of the live gateways). */
import type { GatewayWeightChange } from '../../../protocol/gateways';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { weightOption } from '../../options';
import { gatewaysTable, modeLine, shareText } from './render';

export async function run(opts: { id: string; weight: string; json?: boolean }, deps: Deps): Promise<number> {
  const weight = weightOption(opts.weight);
  const change = await deps.client.put<GatewayWeightChange>(`/_admin/v1/gateways/${encodeURIComponent(opts.id)}/weight`, { weight });
  if (opts.json) {
    deps.out.json(change);
    return EXIT_OK;
  }
  const g = change.gateway;
  deps.out.line(
    change.changed
      ? `${g.id} now weighs ${g.weight}; its share is ${shareText(g.share)}${g.live ? '' : ' (not live: it counts once it is connected and acks)'}.`
      : `${g.id} already weighs ${g.weight}; nothing changed.`,
  );
  deps.out.line(modeLine(change.limits_mode, null));
  deps.out.line(gatewaysTable(change.gateways));
  return EXIT_OK;
}
