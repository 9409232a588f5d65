/**
 * Audit log of every admin action: who (the operator's name, and the id of the token used),
 * what, when, and for a two-person action who approved it. Details are written by the admin
 * handlers and never carry a key's or a token's plaintext (test/control/plaintext-nowhere.ts).
 */
import type { AuditEntry } from '../../protocol/admin';

export interface AuditRow {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string | null;
  detail: string;
  token_id: string | null;
  approved_by: string | null;
}

/** Who made a change beyond the actor's name: the token's id, and the operator who approved it. */
export interface AuditBy {
  tokenId?: string | null;
  approvedBy?: string | null;
}

/** One page of the audit log: rows below `before` (an id), newest first, those matching every filter given. */
export interface AuditFilter {
  /** The actor: an operator's name, `root`, `control`. */
  operator?: string;
  /** An action (`keys.revoke`), or a family (`keys`: `keys` and every `keys.…`). */
  action?: string;
  /** Rows at or after this time (ms). */
  since?: number;
  /** Rows with a smaller id only (the last id of the previous page). */
  before?: number;
  limit: number;
}

/** A stored audit row as the admin API shows it. */
export const auditView = (row: AuditRow): AuditEntry => ({
  id: row.id,
  at: new Date(row.at).toISOString(),
  actor: row.actor,
  token_id: row.token_id,
  approved_by: row.approved_by,
  action: row.action,
  target: row.target,
  detail: JSON.parse(row.detail) as Record<string, unknown>,
});

export interface AuditTable {
  /** Record one admin action (`Store.mutate` records each mutation's own). */
  record(at: number, actor: string, action: string, target: string | null, detail?: Record<string, unknown>, by?: AuditBy): Promise<void>;
  /** The newest `limit` rows, newest first. */
  list(limit?: number): Promise<AuditEntry[]>;
  /** One page of the filtered log, newest first. */
  page(filter: AuditFilter): Promise<AuditEntry[]>;
}
