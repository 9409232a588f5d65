/**
 * How an approved application's key reaches the applicant. A notifier gets the delivery
 * message (the only place the key is, besides the operator's answer) and reports every
 * attempt through `record`, which writes the delivery log without the key.
 */
import type { DeliveryMessage, DeliveryStatus, NotifierKind } from '../../../protocol/applications';
import type { DeliveryAttempt } from '../../store/applications';

export type { DeliveryMessage };

/** One delivery attempt as a notifier reports it; the store adds which application, key and notifier. */
export type AttemptRecord = Omit<DeliveryAttempt, 'application_id' | 'key_id' | 'notifier'>;

export interface DeliveryOutcome {
  status: DeliveryStatus;
  attempts: number;
  /** Why the delivery failed (null unless `status` is `failed`). */
  error: string | null;
}

export interface Notifier {
  readonly kind: NotifierKind;
  deliver(message: DeliveryMessage, record: (attempt: AttemptRecord) => Promise<void>): Promise<DeliveryOutcome>;
}
