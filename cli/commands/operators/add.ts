/**
 * `svcctl operators add NAME --scopes read,keys [--expires 30d]`: the token is printed once.
 * With `money.approvals: 2`, an operator who gets `money` or `operators` waits for a second
 * operator: the pending request is printed, and the token goes to whoever approves it.
 */
import { OPERATOR_SCOPES, type AddOperatorRequest, type IssuedOperatorToken, type OperatorScope } from '../../../protocol/operators';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { durationOption } from '../../options';
import { postMoney } from '../approvals/render';
import { addedLines } from './render';

/** `--scopes a,b`: known scope names, at least one. */
export function scopesOption(value: string): OperatorScope[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(OPERATOR_SCOPES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new UsageError(`--scopes: unknown scope ${unknown.join(', ')}; use ${OPERATOR_SCOPES.join(', ')}`);
  if (names.length === 0) throw new UsageError(`--scopes needs at least one of ${OPERATOR_SCOPES.join(', ')}`);
  return names as OperatorScope[];
}

export async function run(opts: { name: string; scopes: string; expires?: string; json?: boolean }, deps: Deps): Promise<number> {
  const body: AddOperatorRequest = { name: opts.name, scopes: scopesOption(opts.scopes) };
  if (opts.expires !== undefined) body.expires_in_seconds = durationOption('--expires', opts.expires);
  const issued = await postMoney<IssuedOperatorToken>(deps, '/_admin/v1/operators', body, opts.json);
  if (issued === null) return EXIT_OK;
  if (opts.json) deps.out.json(issued);
  else for (const line of addedLines(issued)) deps.out.line(line);
  return EXIT_OK;
}
