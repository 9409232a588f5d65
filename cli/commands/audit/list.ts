/**
 * `svcctl audit list [--operator NAME] [--action A] [--since ISO] [--limit N] [--cursor C]`:
 * one page of the audit log, newest first, filtered by control, and the cursor of the next
 * (`next_cursor` in `--json`).
 */
import { AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT, type AuditEntry, type AuditList } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { pageLimit } from '../../options';
import { table } from '../../output';

export interface AuditListOptions {
  operator?: string;
  action?: string;
  since?: string;
  limit?: string;
  cursor?: string;
  json?: boolean;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

export function auditTable(entries: readonly AuditEntry[]): string {
  return table(
    ['#', 'AT', 'OPERATOR', 'TOKEN', 'ACTION', 'TARGET', 'APPROVED BY'],
    entries.map((e) => [e.id, e.at, e.actor, e.token_id ?? '-', e.action, e.target ?? '-', e.approved_by ?? '-']),
  );
}

export async function run(opts: AuditListOptions, deps: Deps): Promise<number> {
  const query = new URLSearchParams();
  if (opts.operator !== undefined) query.set('operator', opts.operator);
  if (opts.action !== undefined) query.set('action', opts.action);
  if (opts.since !== undefined) {
    if (!ISO_TIME.test(opts.since) || Number.isNaN(Date.parse(opts.since))) {
      throw new UsageError(`--since ${JSON.stringify(opts.since)} is not an ISO 8601 time; use e.g. 2030-01-01T00:00:00Z`);
    }
    query.set('since', opts.since);
  }
  query.set('limit', String(opts.limit === undefined ? AUDIT_DEFAULT_LIMIT : pageLimit('--limit', opts.limit, AUDIT_MAX_LIMIT)));
  if (opts.cursor !== undefined) {
    if (opts.cursor === '') throw new UsageError('--cursor must be a next_cursor from a previous list');
    query.set('cursor', opts.cursor);
  }
  const page = await deps.client.get<AuditList>(`/_admin/v1/audit?${query.toString()}`);
  if (opts.json) {
    deps.out.json(page);
    return EXIT_OK;
  }
  deps.out.line(page.entries.length === 0 ? 'No audit entries.' : auditTable(page.entries));
  if (page.next_cursor !== null) deps.out.line(`more: --cursor ${page.next_cursor}`);
  return EXIT_OK;
}
