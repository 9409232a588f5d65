/**
 * Reading an application body: JSON (`application/json`) or an HTML form
 * (`application/x-www-form-urlencoded`), at most {@link APPLICATION_BODY_LIMIT_BYTES}.
 */
import type { IncomingMessage } from 'node:http';
import { SvcError } from '../../protocol/errors';
import { readJson, readText } from '../../runtime/http';

/**
 * Largest application body. The field limits are in characters; this leaves room for them in
 * 4-byte UTF-8, percent-encoded by a form (about 80 KiB at most). @default 128 KiB
 */
export const APPLICATION_BODY_LIMIT_BYTES = 128 * 1024;

const FORM_TEXT_FIELDS = ['building', 'contact_name', 'wallet', 'social_url', 'messaging_handle', 'applicant_type', 'why'] as const;
const TRUE_VALUES = new Set(['on', 'yes', 'true', '1']);

export type BodyKind = 'json' | 'form';

export function bodyKind(req: IncomingMessage): BodyKind {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  req.resume();
  throw new SvcError('svc_bad_request', 'content-type must be application/json or application/x-www-form-urlencoded', {
    extra: { errors: [{ field: '(body)', message: 'content-type must be application/json or application/x-www-form-urlencoded' }] },
  });
}

/**
 * The answers of an HTML form as the JSON API would take them: text fields as strings,
 * `apis_paid` from repeated fields and/or one per line (or comma-separated), the
 * `feedback_opt_in` checkbox as a boolean. Unknown form fields are ignored.
 */
export function formAnswers(params: URLSearchParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of FORM_TEXT_FIELDS) {
    const value = params.get(name);
    if (value !== null) out[name] = value;
  }
  const apis = params
    .getAll('apis_paid')
    .flatMap((v) => v.split(/[\r\n,]+/))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (apis.length > 0) out.apis_paid = apis;
  out.feedback_opt_in = params.getAll('feedback_opt_in').some((v) => TRUE_VALUES.has(v.trim().toLowerCase()));
  return out;
}

/** The raw answers of a request, JSON or form-encoded. */
export async function readApplicationBody(req: IncomingMessage): Promise<{ kind: BodyKind; raw: unknown }> {
  const kind = bodyKind(req);
  if (kind === 'json') return { kind, raw: await readJson(req, APPLICATION_BODY_LIMIT_BYTES) };
  return { kind, raw: formAnswers(new URLSearchParams(await readText(req, APPLICATION_BODY_LIMIT_BYTES))) };
}
