/** The store's own coded errors, apart from any driver: both stores and their callers load this without loading either. */
import { CodedError } from '../../protocol/coded-error';

/** The store cannot be opened: a bad database URL, a durability setting that did not take, a schema newer than this build. */
export class StoreOpenError extends CodedError {
  override readonly code = 'SVC_ERR_STORE_OPEN';
  constructor(message: string) {
    super(message);
  }
}
