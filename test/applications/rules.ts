/**
 * The rules behind review: which questions are asked (`apisAsked`, `whyAsked`), the priority
 * score and its reasons, the normalisation behind duplicate recognition, and the webhook
 * signature format.
 */
import t from 'tap';
import { createHmac } from 'node:crypto';
import { ApplicationInput, apisAsked, whyAsked, type Application } from '../../protocol/applications';
import { contentHash } from '../../control/applications/normalise';
import { priority } from '../../control/applications/scoring';
import { WebhookNotifier, signWebhook } from '../../control/applications/notifier/webhook';
import { agentAnswers, merchantAnswers } from '../fixtures/applications';

const parse = (raw: Record<string, unknown>): Application => ApplicationInput.parse(raw);

t.test('visibility rule', async (t) => {
  t.ok(apisAsked('ai_agent'));
  t.notOk(apisAsked('api_merchant'));
  t.notOk(apisAsked('ai_agent_merchant'));
  t.ok(whyAsked('api_merchant', undefined), 'merchants are asked why');
  t.ok(whyAsked('ai_agent_merchant', ['x']), 'agent merchants too, whatever they list');
  t.ok(whyAsked('ai_agent', []), 'agents paying for no API are asked');
  t.ok(whyAsked('ai_agent', ['  ']), 'blank names do not count');
  t.notOk(whyAsked('ai_agent', ['OpenAI']), 'agents paying for APIs are not');
  t.notOk(whyAsked(undefined, undefined), 'nothing is asked before a type is chosen');
});

t.test('priority score and reasons', async (t) => {
  const full = priority(parse(agentAnswers({ apis_paid: ['a', 'b', 'c', 'd'] })));
  t.equal(full.score, 100, 'agent + 3 counted APIs + feedback + wallet + code host');
  t.same(full.reasons, [
    '+40 AI agent developer',
    '+30 pays for 4 APIs now',
    '+15 will give feedback (early tester)',
    '+10 wallet given',
    '+5 links github.com',
  ]);

  const agent = priority(
    parse(agentAnswers({ apis_paid: ['OpenAI'], wallet: '', feedback_opt_in: false, social_url: 'https://x.com/ada' })),
  );
  t.same(agent, { score: 50, reasons: ['+40 AI agent developer', '+10 pays for 1 API now'] });

  const merchant = priority(parse(merchantAnswers()));
  t.same(merchant, { score: 10, reasons: ['+10 API merchant'] });
  const agentMerchant = priority(parse(merchantAnswers({ applicant_type: 'ai_agent_merchant', feedback_opt_in: true })));
  t.equal(agentMerchant.score, 45);

  const noUsage = priority(
    parse(agentAnswers({ apis_paid: [], why: 'soon', wallet: '', feedback_opt_in: false, social_url: 'https://gist.github.com/ada' })),
  );
  t.same(noUsage.reasons, ['+40 AI agent developer', '+5 links github.com'], 'subdomains of a code host count');
  t.ok(full.score > agent.score && agent.score > noUsage.score && noUsage.score > merchant.score, 'agents with observable usage first');
});

t.test('content hash normalisation', async (t) => {
  const a = contentHash(parse(agentAnswers()));
  t.not(contentHash(parse(agentAnswers({ messaging_handle: 'signal +1 555 0100' }))), a, 'another contact differs');
  t.equal(contentHash(parse(agentAnswers({ messaging_handle: '@Telegram  @ada' }))), a, 'a leading @ and case do not');
  t.equal(
    contentHash(parse(agentAnswers({ contact_name: 'ADA  lovelace ', apis_paid: ['exa', 'OPENAI'] }))),
    a,
    'case, spacing and order do not',
  );
  t.equal(contentHash(parse(agentAnswers({ social_url: 'http://www.github.com/ada/' }))), a, 'nor the scheme, www. or a trailing slash');
  t.not(contentHash(parse(agentAnswers({ feedback_opt_in: false }))), a, 'every answer is part of the content');
  t.not(contentHash(parse(agentAnswers({ wallet: '' }))), a);
});

t.test('webhook signature and backoff', async (t) => {
  const body = '{"a":1}';
  const expected = 'sha256=' + createHmac('sha256', 'secret-secret-secret').update(`1700000000.${body}`).digest('hex');
  t.equal(signWebhook('secret-secret-secret', 1700000000, body), expected, 'HMAC-SHA256 over "<timestamp>.<body>"');
  t.not(signWebhook('secret-secret-secret', 1700000001, body), expected, 'the timestamp is signed');

  /** A notifier whose jitter draws `draw` (1: the whole delay, 0: the least of it). */
  const withJitter = (draw: number) =>
    new WebhookNotifier({
      url: 'http://127.0.0.1:1/x',
      secret: 's'.repeat(16),
      retries: 5,
      backoffMs: 1000,
      timeoutMs: 100,
      now: Date.now,
      random: () => draw,
    });
  const notifier = withJitter(1);
  t.same(
    [1, 2, 3, 4, 5, 6].map((n) => notifier.backoff(n)),
    [1000, 2000, 4000, 8000, 10000, 10000],
    'doubling, capped at 10 s',
  );
  const low = withJitter(0);
  t.equal(low.backoff(3), 2000, 'jitter keeps at least half the delay');
});
