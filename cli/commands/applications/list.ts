/** `svcctl applications list [--pending] [--overdue] [--testers]`: review order, priority first. */
import type { ApplicationList } from '../../../protocol/applications';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { applicationsTable } from './render';

export interface ListOptions {
  pending?: boolean;
  overdue?: boolean;
  testers?: boolean;
  json?: boolean;
}

export async function run(opts: ListOptions, deps: Deps): Promise<number> {
  const query = new URLSearchParams();
  if (opts.pending) query.set('status', 'pending');
  if (opts.overdue) query.set('overdue', 'true');
  if (opts.testers) query.set('testers', 'true');
  const qs = query.toString();
  const list = await deps.client.get<ApplicationList>(`/_admin/v1/applications${qs ? `?${qs}` : ''}`);
  if (opts.json) {
    deps.out.json(list);
    return EXIT_OK;
  }
  if (list.applications.length === 0) {
    deps.out.line('No applications.');
    return EXIT_OK;
  }
  deps.out.line(applicationsTable(list.applications));
  const overdue = list.applications.filter((a) => a.overdue).length;
  if (overdue > 0) deps.out.line(`\n${overdue} pending application(s) past the ${list.answer_within_hours}-hour answer target.`);
  return EXIT_OK;
}
