/** `svcctl keys revoke ID [--wait]` */
import type { KeyRevoked } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { waitForVersion } from '../wait';

export async function run(opts: { id: string; wait?: boolean; timeout?: string; json?: boolean }, deps: Deps): Promise<number> {
  const key = await deps.client.post<KeyRevoked>(`/_admin/v1/keys/${encodeURIComponent(opts.id)}/revoke`);
  const waited = opts.wait ? await waitForVersion(deps, key.version, opts.timeout) : null;
  if (opts.json) deps.out.json({ ...key, ...(waited ? { propagation: waited } : {}) });
  else {
    deps.out.line(key.changed ? `Revoked ${key.id} (${key.prefix}…) at state version ${key.version}.` : `${key.id} was already revoked.`);
    if (waited) deps.out.line(`All ${waited.gateways} connected gateway(s) enforce it.`);
  }
  return EXIT_OK;
}
