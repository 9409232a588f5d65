/** The words sent with a key: how to call the gateway with it, and the beta's terms. */
import type { DeliveryMessage } from './types';

export function instructions(endpoints: string[], marketUrl: string | null): string {
  const base = marketUrl ?? '{market_url}';
  const example = endpoints[0] ?? '<endpoint>';
  return [
    `Call the gateway with your key as a bearer token: POST ${base}/v1/${example}/<upstream-path> with the header "Authorization: Bearer <your key>".`,
    `Endpoints you can call: ${endpoints.length > 0 ? endpoints.join(', ') : 'none are registered yet; we will tell you when they are'}.`,
    'The key is shown once and svc keeps only a hash of it: store it now. A lost key cannot be recovered; ask us for a new one.',
    'This is a private beta: rate caps are low (sized for proving an integration), there is no SLA, and the service may be taken down to ship a fix.',
  ].join('\n');
}

/** The whole text for the operator to send on, key included. */
export function operatorMessage(message: DeliveryMessage): string {
  return [
    `Hello ${message.contact_name}, your svc private beta application ${message.application_id} is approved.`,
    `Your API key: ${message.key}`,
    message.instructions,
  ].join('\n');
}
