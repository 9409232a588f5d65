/** The store's own coded errors, apart from any driver: both stores and their callers load this without loading either. */
import { CodedError } from '../../protocol/coded-error';

/** The store cannot be opened: a bad database URL, a durability setting that did not take, a schema newer than this build. */
export class StoreOpenError extends CodedError {
  override readonly code = 'SVC_ERR_STORE_OPEN';
  constructor(message: string) {
    super(message);
  }
}

/**
 * A settlement batch found the calls it planned settled, or gone from the queue, when it wrote
 * them: another settler wrote them meanwhile (one past its lease). Its transaction rolls back
 * and nothing of the batch is written; the settler tries again from what is committed.
 */
export class SettlementConflictError extends CodedError {
  override readonly code = 'SVC_ERR_SETTLEMENT_CONFLICT';
}

/**
 * The signing key a rotation prepared is no longer the one waiting to be published: another
 * rotation prepared its own since. Nothing is published or activated; the current key signs on.
 */
export class KeyNotPreparedError extends CodedError {
  override readonly code = 'SVC_ERR_KEY_NOT_PREPARED';
  constructor(readonly kid: string) {
    super(`no signing key ${kid} is prepared (another rotation replaced it)`);
  }
}
