/** `svcctl flag set NAME on|off [--note TEXT] [--wait]` */
import { FLAG_NAMES, normaliseFlagName, type FlagChange } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { waitForVersion } from '../wait';

export function flagOption(name: string): string {
  const flag = normaliseFlagName(name);
  if (flag === null) throw new UsageError(`unknown flag ${JSON.stringify(name)}; known flags: ${FLAG_NAMES.join(', ')}`);
  return flag;
}

const ON = new Set(['on', 'true', '1', 'yes', 'enable', 'enabled']);
const OFF = new Set(['off', 'false', '0', 'no', 'disable', 'disabled']);

export async function run(
  opts: { name: string; value: string; note?: string; wait?: boolean; timeout?: string; json?: boolean },
  deps: Deps,
): Promise<number> {
  const name = flagOption(opts.name);
  const raw = opts.value.toLowerCase();
  if (!ON.has(raw) && !OFF.has(raw)) throw new UsageError(`value must be on or off, got ${JSON.stringify(opts.value)}`);
  const body = { value: ON.has(raw), ...(opts.note !== undefined ? { note: opts.note } : {}) };
  const flag = await deps.client.put<FlagChange>(
    `/_admin/v1/flags/${name}`,
    body,
  );
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
