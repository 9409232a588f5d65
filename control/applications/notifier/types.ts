/**
 * How an approved application's key reaches the applicant. A notifier gets the delivery
 * message (the only place the key is, besides the operator's answer) and reports every
 * attempt through `record`, which writes the delivery log without the key.
 */
import type { DeliveryStatus, NotifierKind } from '../../../protocol/applications';
import type { DeliveryAttempt } from '../../store/applications';

/** The body a webhook receives (and what the operator is shown to send on). */
export interface DeliveryMessage {
  type: 'svc.application.approved';
  /** Same on every retry of one delivery, so a receiver can drop repeats. */
  delivery_id: string;
  application_id: string;
  contact_name: string;
  messaging_handle: string;
  key: string;
  key_id: string;
  /** Endpoint ids the key may call. */
  endpoints: string[];
  /** The gateway base URL, when configured (`applications.marketUrl`). */
  market_url: string | null;
  /** How to use the key; it does not repeat the key. */
  instructions: string;
  sent_at: string;
}

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
  deliver(message: DeliveryMessage, record: (attempt: AttemptRecord) => void): Promise<DeliveryOutcome>;
}
