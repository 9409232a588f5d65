/** `svcctl flag set NAME on|off [--note TEXT] [--wait]` */
import type { FlagChange } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { flagOption, onOff } from '../../options';
import { waitForVersion } from '../wait';

export async function run(
  opts: { name: string; value: string; note?: string; wait?: boolean; timeout?: string; json?: boolean },
  deps: Deps,
): Promise<number> {
  const name = flagOption(opts.name);
  const body = { value: onOff(opts.value), ...(opts.note !== undefined ? { note: opts.note } : {}) };
  const flag = await deps.client.put<FlagChange>(`/_admin/v1/flags/${name}`, body);
  const waited = opts.wait ? await waitForVersion(deps, flag.version, opts.timeout) : null;
  if (opts.json) deps.out.json({ ...flag, ...(waited ? { propagation: waited } : {}) });
  else {
    deps.out.line(
      flag.changed
        ? `${flag.name} is now ${flag.value ? 'on' : 'off'} (state version ${flag.version}, changelog #${flag.changelog_id}).`
        : `${flag.name} was already ${flag.value ? 'on' : 'off'}; nothing changed.`,
    );
    if (waited) deps.out.line(`All ${waited.gateways} connected gateway(s) enforce it.`);
  }
  return EXIT_OK;
}
