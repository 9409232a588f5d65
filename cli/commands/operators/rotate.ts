/**
 * `svcctl operators rotate NAME [--grace 1h]`: a new token; the old one stops at once or when the
 * grace ends. With `money.approvals: 2`, another operator's token, when that operator holds
 * `money` or `operators`, waits for a second operator: the pending request is printed, and the
 * new token goes to whoever approves it.
 */
import type { RotatedOperatorToken } from '../../../protocol/operators';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { durationOption } from '../../options';
import { postMoney } from '../approvals/render';
import { tokenText } from './render';

export async function run(opts: { name: string; grace?: string; json?: boolean }, deps: Deps): Promise<number> {
  const body = opts.grace === undefined ? {} : { grace_seconds: opts.grace === '0' ? 0 : durationOption('--grace', opts.grace) };
  const path = `/_admin/v1/operators/${encodeURIComponent(opts.name)}/rotate`;
  const rotated = await postMoney<RotatedOperatorToken>(deps, path, body, opts.json);
  if (rotated === null) return EXIT_OK;
  if (opts.json) deps.out.json(rotated);
  else for (const line of operatorRotatedLines(rotated)) deps.out.line(line);
  return EXIT_OK;
}

/** What `operators rotate` prints, and `approvals approve` once a rotation is approved. */
export function operatorRotatedLines(rotated: RotatedOperatorToken): string[] {
  const lines = [`Rotated operator ${rotated.name}. The new token is shown once; hand it over now:`, ...tokenText(rotated)];
  for (const old of rotated.replaced) {
    lines.push(
      Date.parse(old.expires_at) <= Date.parse(rotated.created_at)
        ? `The previous token ${old.token_id} no longer works.`
        : `The previous token ${old.token_id} keeps working until ${old.expires_at}.`,
    );
  }
  if (rotated.replaced.length === 0) lines.push('It had no other token that worked.');
  return lines;
}
