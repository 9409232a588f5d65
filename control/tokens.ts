/**
 * The admin, sync and metrics tokens of several controls on one PostgreSQL database: every
 * control accepts the same ones, so a gateway or `svcctl` may talk to any of them. The first
 * control to start on the database stores their SHA-256 (never the tokens), with its id and the
 * files it wrote them to, as on SQLite; a later control checks requests against those digests
 * and writes no token files of its own (start-up says where the first control wrote them). A
 * later control whose data dir already holds a token file, or that is configured with a token
 * (`SVC_ADMIN_TOKEN`, …), must hold the same token, or it does not start.
 */
import { rmSync } from 'node:fs';
import type { BootstrapResult, BootstrapToken } from './bootstrap';
import type { ClusterTable, StoredToken } from './store';
import { CodedError } from '../protocol/coded-error';

/** A token of this control differs from the one the controls on the database share. */
export class TokenConflictError extends CodedError {
  override readonly code = 'SVC_ERR_TOKEN_CONFLICT';
  constructor(message: string) {
    super(message);
  }
}

const CONFIGURED: Record<StoredToken['name'], string> = {
  admin: 'SVC_ADMIN_TOKEN',
  sync: 'SVC_SYNC_TOKEN',
  metrics: 'SVC_METRICS_TOKEN',
};

/**
 * Share `boot`'s tokens through `cluster`: store them if this control is the first, else adopt
 * the stored ones (deleting the token files this start just wrote) or refuse a different one
 * (`TokenConflictError`). Updates `boot`'s tokens in place.
 */
export async function shareTokens(cluster: ClusterTable, boot: BootstrapResult, now: number): Promise<void> {
  const tokens: [StoredToken['name'], BootstrapToken][] = [
    ['admin', boot.adminToken],
    ['sync', boot.syncToken],
    ['metrics', boot.metricsToken],
  ];
  for (const [name, mine] of tokens) {
    const stored = await cluster.shareToken({ name, sha256: mine.digest, control_id: boot.controlId, file: mine.file }, now);
    if (stored.control_id !== boot.controlId || !stored.sha256.equals(mine.digest)) {
      mine.from = { control_id: stored.control_id, file: stored.file };
    }
    if (stored.sha256.equals(mine.digest)) continue;
    const theirs = `the ${name} token of the controls on this database (made by ${stored.control_id}, ${stored.file === null ? 'configured there' : `written to ${stored.file} on its host`})`;
    if (!mine.created) {
      const ours = mine.file === null ? CONFIGURED[name] : mine.file;
      const fix = mine.file === null ? `set ${CONFIGURED[name]} to that token, or unset it` : `delete ${mine.file} to use it`;
      throw new TokenConflictError(`${ours} is not ${theirs}; ${fix}`);
    }
    // Written by this start a moment ago and read by no one: this control uses the shared one instead.
    rmSync(mine.file!, { force: true });
    mine.token = null;
    mine.file = null;
    mine.created = false;
    mine.digest = stored.sha256;
  }
}
