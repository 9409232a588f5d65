/** `svcctl operators list`: root first, then by name; never a token. */
import type { OperatorList } from '../../../protocol/operators';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { operatorsTable } from './render';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.get<OperatorList>('/_admin/v1/operators');
  if (opts.json) deps.out.json(answer);
  else deps.out.line(operatorsTable(answer.operators));
  return EXIT_OK;
}
