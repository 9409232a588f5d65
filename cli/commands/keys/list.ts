/** `svcctl keys list [--status active|expired|revoked]` */
import type { KeyView } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { keysTable } from './render';

export interface ListOptions {
  status?: string;
  json?: boolean;
}

const STATUSES = ['active', 'expired', 'revoked'];

export async function run(opts: ListOptions, deps: Deps): Promise<number> {
  if (opts.status !== undefined && !STATUSES.includes(opts.status)) {
    throw new UsageError(`--status must be one of ${STATUSES.join(', ')}`);
  }
  const { keys } = await deps.client.get<{ keys: KeyView[] }>('/_admin/v1/keys');
  const shown = opts.status === undefined ? keys : keys.filter((k) => k.status === opts.status);
  if (opts.json) deps.out.json({ keys: shown });
  else deps.out.line(shown.length === 0 ? 'No keys.' : keysTable(shown));
  return EXIT_OK;
}
