/** `svcctl operators revoke NAME`: its tokens stop working at once, on every control. */
import type { OperatorRevoked } from '../../../protocol/operators';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export async function run(opts: { name: string; json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.post<OperatorRevoked>(`/_admin/v1/operators/${encodeURIComponent(opts.name)}/revoke`, {});
  if (opts.json) deps.out.json(answer);
  else
    deps.out.line(
      answer.changed ? `Revoked operator ${answer.name}; its tokens no longer work.` : `Operator ${answer.name} was already revoked.`,
    );
  return EXIT_OK;
}
