/**
 * Duplicate recognition: the content hash of an application is the SHA-256 of its answers
 * after normalisation (Unicode NFKC, case, runs of whitespace, `@` before a handle, the
 * scheme, `www.` and trailing slash of the link, the order and case of API names). Two
 * submissions with the same hash within `applications.duplicateWindowS` are one application.
 */
import { createHash } from 'node:crypto';
import type { Application } from '../../protocol/applications';

const fold = (text: string): string => text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

function foldUrl(url: string): string {
  return fold(url)
    .replace(/^https?:\/\//, '')
    .replace(/^www\./, '')
    .replace(/\/+$/, '');
}

/** The answers in the form that is compared; exported for tests. */
export function normalisedAnswers(app: Application): unknown[] {
  return [
    app.applicant_type,
    fold(app.contact_name),
    fold(app.messaging_handle).replace(/^@/, ''),
    foldUrl(app.social_url),
    app.wallet === null ? null : app.wallet.startsWith('0x') ? app.wallet.toLowerCase() : app.wallet,
    fold(app.building),
    app.apis_paid.map(fold).sort(),
    app.why === null ? null : fold(app.why),
    app.feedback_opt_in,
  ];
}

export function contentHash(app: Application): string {
  return createHash('sha256')
    .update(JSON.stringify(normalisedAnswers(app)))
    .digest('hex');
}
