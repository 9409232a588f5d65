/**
 * Cursors for `GET /api/activity?before=`: the position (call time, call id) of the last call
 * of a page, sealed with AES-256-GCM so the raw call id never leaves control (the public sees
 * opaque ids only). Sealing is deterministic (the nonce is derived from the position), so the
 * same page always links to the same next cursor and cached pages stay shareable. The indexer's
 * activity and the account's calls on the public API page with the same cursors and `parseBefore`.
 */
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import { SvcError } from '../protocol/errors';
import { NIL_CALL_ID } from '../protocol/outcome';
import type { ActivityCursor } from './store/public-reads';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class CursorCodec {
  private readonly key: Buffer;
  private readonly nonceKey: Buffer;

  /** @param secret the per-database public id secret; sub-keys are derived from it. */
  constructor(secret: Buffer) {
    this.key = createHmac('sha256', secret).update('activity-cursor:key').digest();
    this.nonceKey = createHmac('sha256', secret).update('activity-cursor:nonce').digest();
  }

  seal(cursor: ActivityCursor): string {
    const plain = Buffer.from(`${cursor.started_at}:${cursor.call_id}`, 'utf8');
    const nonce = createHmac('sha256', this.nonceKey).update(plain).digest().subarray(0, NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([nonce, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  /** The position in `token`, or null when it is not a cursor this database issued. */
  open(token: string): ActivityCursor | null {
    if (!/^[A-Za-z0-9_-]{40,200}$/.test(token)) return null;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length <= NONCE_BYTES + TAG_BYTES) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, NONCE_BYTES));
      decipher.setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      const plain = Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      const colon = plain.indexOf(':');
      const startedAt = Number(plain.slice(0, colon));
      if (colon < 1 || !Number.isSafeInteger(startedAt)) return null;
      return { started_at: startedAt, call_id: plain.slice(colon + 1) };
    } catch {
      return null;
    }
  }
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `before` is a cursor from `next_before`, or an ISO 8601 time (calls that started earlier).
 * Anything else is 400 `svc_bad_request`.
 */
export function parseBefore(raw: string | null, cursors: CursorCodec): ActivityCursor | null {
  if (raw === null || raw === '') return null;
  if (ISO_TIME.test(raw)) {
    const t = Date.parse(raw);
    if (Number.isFinite(t)) return { started_at: t, call_id: NIL_CALL_ID }; // before every call that started at t
  }
  const cursor = cursors.open(raw);
  if (cursor === null) {
    throw new SvcError('svc_bad_request', 'before must be a next_before cursor from an earlier page or an ISO 8601 time', {
      extra: { errors: [{ field: 'before', message: 'is not a cursor from this indexer or an ISO 8601 time' }] },
    });
  }
  return cursor;
}
