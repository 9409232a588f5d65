/** `svcctl settler resume`: settle on the cadence again. */
import type { SettlerStatus } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { print } from './status';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  return print(await deps.client.post<SettlerStatus>('/_admin/v1/settler/resume'), opts, deps);
}
