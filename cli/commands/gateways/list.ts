/** `svcctl gateways list`: every gateway control knows, its limit share and weight, applied version, engine, last seen. */
import { groupWorkers, type GatewaysView } from '../../../protocol/gateways';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { gatewaysTable, modeLine } from './render';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const view = await deps.client.get<GatewaysView>('/_admin/v1/gateways');
  if (opts.json) {
    // Each gateway gains `gateway`: for a worker, the gateway it belongs to; null for a gateway of its own.
    deps.out.json({ ...view, gateways: groupWorkers(view.gateways) });
    return EXIT_OK;
  }
  deps.out.line(modeLine(view.limits_mode, view.lease_s));
  if (view.gateways.length === 0) deps.out.line('No gateway has connected yet.');
  else deps.out.line(gatewaysTable(view.gateways));
  return EXIT_OK;
}
