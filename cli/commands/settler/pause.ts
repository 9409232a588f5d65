/** `svcctl settler pause`: stop scheduled settlement at the next batch boundary (kept across restarts). */
import type { SettlerStatus } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { print } from './status';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  return print(await deps.client.post<SettlerStatus>('/_admin/v1/settler/pause'), opts, deps);
}
