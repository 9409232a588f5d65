/**
 * Public application routes on {api_url} (docs/design.md §8):
 *
 * | route | what |
 * |---|---|
 * | `GET /apply` | the form (HTML) |
 * | `POST /apply` | the form's handler: 303 to `/apply/thanks?id=…`, or the form again with errors (400) |
 * | `GET /apply/thanks` | the thank-you page |
 * | `POST /api/v1/applications` | JSON or form-encoded: 201 `{"id","status":"received","answer_within_hours":24}`, 200 for a duplicate |
 *
 * Both POSTs share the per-address limits (429 `svc_rate_limited` + `Retry-After`; the address
 * is `runtime/client-address.ts`'s, behind `public.trustedProxyHops` proxies): stored
 * submissions count against `applications.submitLimitCount`, refused ones (invalid answers,
 * a bad body) against the looser `applications.invalidLimitCount`, so a typo does not use up
 * the quota for the corrected answers.
 */
import { ANSWER_WITHIN_HOURS, type ApplicationReceipt } from '../../protocol/applications';
import { clientAddress } from '../../runtime/client-address';
import { SvcError } from '../../protocol/errors';
import { sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { RequestContext, Router } from '../http/router';
import type { FieldError } from '../http/validate';
import { readApplicationBody } from './body';
import { submitApplication, validateApplication } from './intake';
import { SubmitLimiter } from './limiter';
import { sendHtml } from '../pages/respond';
import { EMPTY_FORM, renderForm, renderProblem, renderThanks, type FormState } from './page';

const ID_PATTERN = /^app_[1-9A-HJ-NP-Za-km-z]{12}$/;

function receipt(id: string): ApplicationReceipt {
  return { id, status: 'received', answer_within_hours: ANSWER_WITHIN_HOURS };
}

/** Per-field messages for the form: `apis_paid.2` belongs to the `apis_paid` field. */
function formErrors(errors: FieldError[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { field, message } of errors) {
    const name = field.split('.')[0]!;
    const text = name === 'apis_paid' && field !== 'apis_paid' ? `each API name ${message}` : message;
    out[name] ??= text;
  }
  return out;
}

/** What the user typed, to put back into a re-rendered form. */
function formValues(raw: unknown): FormState['values'] {
  const values: FormState['values'] = {};
  if (raw === null || typeof raw !== 'object') return values;
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof value === 'string') values[name] = value;
    else if (typeof value === 'boolean') values[name] = value;
    else if (Array.isArray(value)) values[name] = value.filter((v) => typeof v === 'string').join('\n');
  }
  return values;
}

/** Run `step`; when it refuses the submission (a 4xx other than 429), count that under the invalid limit. */
async function countingInvalid<T>(limiter: SubmitLimiter, client: string, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof SvcError && err.status >= 400 && err.status < 500 && err.code !== 'svc_rate_limited') {
      limiter.take(client, 'invalid'); // throws 429 instead when the invalid count is used up
    }
    throw err;
  }
}

export function registerApplicationRoutes(router: Router, ctx: ControlContext): void {
  const settings = ctx.config.applications;
  const limiter = new SubmitLimiter(
    { submitCount: settings.submitLimitCount, invalidCount: settings.invalidLimitCount, windowMs: settings.submitLimitWindowS * 1000 },
    ctx.now,
  );

  // The listeners' URLs, for the site header (known once they are bound).
  const urls = () => ({ api: ctx.urls.api, indexer: ctx.urls.indexer });

  router.get('/apply', { otherQuery: 'ignore' }, ({ res }) => sendHtml(res, 200, (nonce) => renderForm(nonce, urls(), EMPTY_FORM)));

  router.get('/apply/thanks', { query: ['id'], otherQuery: 'ignore' }, ({ res, query }) => {
    const id = query.get('id');
    sendHtml(res, 200, (nonce) => renderThanks(nonce, urls(), id !== null && ID_PATTERN.test(id) ? id : null));
  });

  router.post('/apply', { otherQuery: 'ignore' }, async ({ req, res }: RequestContext) => {
    const client = clientAddress(req, ctx.config.public.trustedProxyHops);
    let raw: unknown = {};
    try {
      raw = await countingInvalid(limiter, client, async () => (await readApplicationBody(req)).raw);
      limiter.check(client); // after reading, so a refused form keeps what was typed
      const app = await countingInvalid(limiter, client, () => validateApplication(raw));
      limiter.take(client, 'submit');
      const { id } = await submitApplication(ctx, app, { source: 'form', by: { actor: 'public' } });
      res.writeHead(303, { location: `/apply/thanks?id=${encodeURIComponent(id)}`, 'cache-control': 'no-store', 'content-length': '0' });
      res.end();
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      const values = formValues(raw);
      if (err.code === 'svc_bad_request' && Array.isArray(err.extra?.errors)) {
        const errors = formErrors(err.extra.errors as FieldError[]);
        sendHtml(res, 400, (nonce) => renderForm(nonce, urls(), { values, errors }));
      } else if (err.code === 'svc_rate_limited') {
        const notice = `Too many applications from your address. Please try again in ${Math.ceil(Number(err.headers['retry-after']) / 60)} minute(s).`;
        sendHtml(res, 429, (nonce) => renderForm(nonce, urls(), { values, errors: {}, notice }), { ...err.headers });
      } else {
        sendHtml(res, err.status, (nonce) => renderProblem(nonce, urls(), 'Application not sent', err.message));
      }
    }
  });

  router.post('/api/v1/applications', async ({ req, res }) => {
    const client = clientAddress(req, ctx.config.public.trustedProxyHops);
    limiter.check(client); // before reading: an address over a limit costs no parsing
    const app = await countingInvalid(limiter, client, async () => validateApplication((await readApplicationBody(req)).raw));
    limiter.take(client, 'submit');
    const { id, duplicate } = await submitApplication(ctx, app, { source: 'api', by: { actor: 'public' } });
    sendJson(res, duplicate ? 200 : 201, receipt(id));
  });
}
