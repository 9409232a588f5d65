/**
 * Review priority (docs/design.md §8: agent developers with active, observable usage first). The score
 * is a sum of points read from the answers, each with the reason shown to the operator:
 *
 * | answer | points |
 * |---|---|
 * | applicant type AI agent / AI agent merchant / API merchant | 40 / 30 / 10 |
 * | each API the agent already pays for (observable usage), at most 3 | 10 each |
 * | feedback opt-in (early tester) | 15 |
 * | wallet given (payouts can be attributed from the first call) | 10 |
 * | social link on a code or model host (work that can be looked at) | 5 |
 *
 * The maximum is 100. Lists sort pending applications by score, then oldest first.
 */
import type { Application, PriorityView } from '../../protocol/applications';

export const TYPE_POINTS = Object.freeze({ ai_agent: 40, ai_agent_merchant: 30, api_merchant: 10 });
export const POINTS_PER_PAID_API = 10;
export const MAX_PAID_APIS_SCORED = 3;
export const FEEDBACK_POINTS = 15;
export const WALLET_POINTS = 10;
export const CODE_HOST_POINTS = 5;

/** Hosts where a link shows work that can be looked at. */
export const CODE_HOSTS: readonly string[] = [
  'github.com',
  'gitlab.com',
  'bitbucket.org',
  'codeberg.org',
  'huggingface.co',
  'npmjs.com',
  'pypi.org',
];

const TYPE_REASON = { ai_agent: 'AI agent developer', ai_agent_merchant: 'AI agent merchant', api_merchant: 'API merchant' };

function codeHost(url: string): string | null {
  try {
    const host = new URL(url).hostname.toLowerCase().replace(/^www\./, '');
    return CODE_HOSTS.find((h) => host === h || host.endsWith(`.${h}`)) ?? null;
  } catch {
    return null;
  }
}

export function priority(app: Application): PriorityView {
  const parts: [number, string][] = [[TYPE_POINTS[app.applicant_type], TYPE_REASON[app.applicant_type]]];
  const paid = app.apis_paid.length;
  if (paid > 0) {
    const counted = Math.min(paid, MAX_PAID_APIS_SCORED);
    parts.push([counted * POINTS_PER_PAID_API, `pays for ${paid} API${paid === 1 ? '' : 's'} now`]);
  }
  if (app.feedback_opt_in) parts.push([FEEDBACK_POINTS, 'will give feedback (early tester)']);
  if (app.wallet !== null) parts.push([WALLET_POINTS, 'wallet given']);
  const host = codeHost(app.social_url);
  if (host !== null) parts.push([CODE_HOST_POINTS, `links ${host}`]);
  return {
    score: parts.reduce((sum, [points]) => sum + points, 0),
    reasons: parts.map(([points, reason]) => `+${points} ${reason}`),
  };
}
