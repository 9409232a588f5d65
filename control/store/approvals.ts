/**
 * Requests for a money action waiting for a second operator (migration 17). A request is
 * decided at most once: `decide` changes only a pending request whose time is not up, so two
 * operators approving at once (on one control or two) act once. The view rules (an expired
 * request is a pending one past `expires_at`) are here too.
 */
import type { ApprovalStatus, MoneyAction } from '../../protocol/approvals';

export interface ApprovalRow {
  id: string;
  action: MoneyAction;
  target: string | null;
  /** The request as asked, JSON. */
  detail: string;
  requested_by: string;
  requested_token_id: string | null;
  requested_at: number;
  expires_at: number;
  status: 'pending' | 'approved' | 'rejected';
  decided_by: string | null;
  decided_at: number | null;
  reason: string | null;
}

export type NewApproval = Omit<ApprovalRow, 'status' | 'decided_by' | 'decided_at' | 'reason'>;

export interface Decision {
  id: string;
  status: 'approved' | 'rejected';
  by: string;
  now: number;
  reason: string | null;
}

/** A request's state at `now`: a pending one past its expiry is expired. */
export const approvalStatus = (row: Pick<ApprovalRow, 'status' | 'expires_at'>, now: number): ApprovalStatus =>
  row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;

/** Most requests a list shows, newest first. @default 1000 */
export const APPROVAL_LIST_LIMIT = 1_000;

export interface ApprovalsTable {
  /** Record a pending request (inside `Store.mutate`, with its audit row). */
  insert(row: NewApproval): Promise<void>;
  byId(id: string): Promise<ApprovalRow | undefined>;
  /** The newest {@link APPROVAL_LIST_LIMIT} requests, newest first. */
  list(): Promise<ApprovalRow[]>;
  /** Whether this decided the request (false: it was decided already, expired, or does not exist). Inside `Store.mutate`. */
  decide(d: Decision): Promise<boolean>;
}
