/** What every change to the store carries: who makes it, what the audit log records, what gateways must see change. */

/** Who makes a change, as the audit log records it. */
export interface Actor {
  /** The operator's name (`root` for the bootstrap admin token), or the process's (`control`). */
  actor: string;
  /** The id of the token the operator presented (`opt_…`, `root`, `root-env`); absent or null for control's own changes. */
  tokenId?: string | null;
  /** The second operator who approved a two-person action. */
  approvedBy?: string | null;
}

export interface MutationContext extends Actor {
  /** Clock reading for this mutation, in ms. */
  now: number;
}

export interface Audit {
  action: string;
  target?: string | null;
  detail?: Record<string, unknown>;
  /** What gateways must see change: each entry bumps the state version once, together. */
  changes?: StateChange[];
}

export type StateChangeKind = 'key' | 'endpoint' | 'flags' | 'limits' | 'account';
export interface StateChange {
  kind: StateChangeKind;
  /** Key id, endpoint id, account id (its money grew), or '*' for flags and limits. */
  entity: string;
}
