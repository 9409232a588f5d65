/**
 * Taking in an application from any source: validate with the shared schema, recognise a
 * duplicate, store. One place, so the form, the JSON API and `svcctl applications add` agree.
 */
import { ApplicationInput, type Application, type ApplicationSource } from '../../protocol/applications';
import { newId } from '../../protocol/keys';
import type { ControlContext } from '../context';
import type { Actor } from '../store';
import { parseBody } from '../http/validate';
import { contentHash } from './normalise';

export interface Intake {
  id: string;
  /** True when the answers matched an application received within the duplicate window. */
  duplicate: boolean;
}

/** Validate raw answers; throws `svc_bad_request` listing every field. */
export function validateApplication(raw: unknown): Application {
  return parseBody(ApplicationInput, raw);
}

/**
 * Record `app` unless the same answers arrived within `applications.duplicateWindowS`, in
 * which case the existing application is returned (and its submission count grows). The
 * check and the insert are one transaction, so concurrent duplicates make one row.
 */
export async function submitApplication(
  ctx: ControlContext,
  app: Application,
  opts: { source: ApplicationSource; by: Actor; receivedAt?: number },
): Promise<Intake> {
  const now = ctx.now();
  const receivedAt = opts.receivedAt ?? now;
  const hash = contentHash(app);
  const since = now - ctx.config.applications.duplicateWindowS * 1000;
  const id = newId('app');
  const { result } = await ctx.store.mutate(
    { ...opts.by, now },
    { action: 'applications.submit', target: id, detail: { source: opts.source } },
    async (tx): Promise<Intake> => {
      const existing = await tx.applications.recentByHash(hash, since);
      if (existing) {
        await tx.applications.resubmitted(existing.id, now);
        return { id: existing.id, duplicate: true };
      }
      await tx.applications.insert({
        id,
        received_at: receivedAt,
        source: opts.source,
        application: app,
        content_hash: hash,
        recorded_by: opts.source === 'direct' ? opts.by.actor : null,
      });
      return { id, duplicate: false };
    },
  );
  ctx.log.info(result.duplicate ? 'application resubmitted' : 'application received', { application_id: result.id, source: opts.source });
  return result;
}
