/** `--wait`: block until every connected gateway has applied a state version. */
import type { WaitResult } from '../../protocol/gateways';
import type { Deps } from '../deps';
import { CliError } from '../exit-codes';
import { durationOption } from '../options';

/** What `--wait` reports once every connected gateway applied the version. */
export type Propagation = Pick<WaitResult, 'version' | 'gateways' | 'waited_ms'>;

/** Default bound on `--wait`. @default 30 s */
export const DEFAULT_WAIT_S = 30;

export async function waitForVersion(deps: Deps, version: number, timeout?: string): Promise<Propagation> {
  const seconds = timeout === undefined ? DEFAULT_WAIT_S : durationOption('--timeout', timeout);
  const answer = await deps.client.post<WaitResult>('/_admin/v1/sync/wait', {
    version,
    timeout_ms: seconds * 1000,
  });
  if (!answer.complete) {
    throw new CliError(
      `state version ${version} is committed but gateway(s) ${answer.pending.join(', ')} did not apply it within ${seconds}s`,
    );
  }
  return { version: answer.version, gateways: answer.gateways, waited_ms: answer.waited_ms };
}
