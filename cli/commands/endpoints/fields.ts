/** Turns endpoint command-line options into the admin API's body, and renders endpoints. */
import { readFileSync } from 'node:fs';
import { BILLING_MODES, type Billing, type EndpointView, type UpdateEndpointRequest } from '../../../protocol/admin';
import { UsageError } from '../../exit-codes';
import { parseAmount, wholeNumber } from '../../options';
import { table } from '../../output';

export interface EndpointOptions {
  upstream?: string;
  /** The public display name; false (`--no-display-name`) removes it. */
  displayName?: string | false;
  methods?: string;
  price?: string;
  premium?: string;
  slaMs?: string;
  timeoutMs?: string;
  refundCapPerHour?: string;
  refundCapPerCall?: string;
  refundCapPerBatch?: string;
  treasuryFeeBps?: string;
  billing?: string;
  header?: string[];
  /** A JSON schema file; false (`--no-response-schema`) removes the schema. */
  responseSchema?: string | false;
  json?: boolean;
}

function schemaFile(path: string): UpdateEndpointRequest['response_schema'] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`--response-schema: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text) as UpdateEndpointRequest['response_schema'];
  } catch {
    throw new UsageError(`--response-schema: ${path} is not valid JSON`);
  }
}

function header(value: string): [string, string] {
  const colon = value.indexOf(':');
  if (colon <= 0) throw new UsageError(`--header must look like 'Name: value', got ${JSON.stringify(value.split(':')[0])}…`);
  return [value.slice(0, colon).trim(), value.slice(colon + 1).trim()];
}

export function endpointBody(opts: EndpointOptions): UpdateEndpointRequest {
  const body: UpdateEndpointRequest = {};
  if (opts.upstream !== undefined) body.upstream = opts.upstream;
  if (opts.displayName === false) body.display_name = null;
  else if (opts.displayName !== undefined) body.display_name = opts.displayName;
  if (opts.methods !== undefined) {
    body.methods = opts.methods
      .split(',')
      .map((m) => m.trim().toUpperCase())
      .filter(Boolean) as UpdateEndpointRequest['methods'];
  }
  if (opts.price !== undefined) body.price = wholeNumber('--price', opts.price);
  if (opts.premium !== undefined) body.premium = wholeNumber('--premium', opts.premium);
  if (opts.slaMs !== undefined) body.sla_ms = wholeNumber('--sla-ms', opts.slaMs);
  if (opts.timeoutMs !== undefined) body.timeout_ms = wholeNumber('--timeout-ms', opts.timeoutMs);
  if (opts.refundCapPerHour !== undefined) body.refund_cap_per_hour = wholeNumber('--refund-cap-per-hour', opts.refundCapPerHour);
  if (opts.refundCapPerCall !== undefined)
    body.refund_cap_per_call = parseAmount('--refund-cap-per-call', opts.refundCapPerCall, 'allowed');
  if (opts.refundCapPerBatch !== undefined)
    body.refund_cap_per_batch = parseAmount('--refund-cap-per-batch', opts.refundCapPerBatch, 'allowed');
  if (opts.treasuryFeeBps !== undefined) body.treasury_fee_bps = wholeNumber('--treasury-fee-bps', opts.treasuryFeeBps);
  if (opts.billing !== undefined) {
    if (!(BILLING_MODES as readonly string[]).includes(opts.billing))
      throw new UsageError(`--billing must be ${BILLING_MODES.join(' or ')}`);
    body.billing = opts.billing as Billing;
  }
  if (opts.header !== undefined && opts.header.length > 0) body.headers = Object.fromEntries(opts.header.map(header));
  if (opts.responseSchema === false) body.response_schema = null;
  else if (opts.responseSchema !== undefined) body.response_schema = schemaFile(opts.responseSchema);
  return body;
}

/** A cap's value: 0 is no cap. */
const cap = (micro: number): string => (micro === 0 ? 'none' : String(micro));

export function endpointLines(e: EndpointView): string[] {
  return [
    `id:                   ${e.id}`,
    `display name:         ${e.display_name ?? '-'}`,
    `upstream:             ${e.upstream}`,
    `methods:              ${e.methods.join(', ')}`,
    `timeout_ms:           ${e.timeout_ms}`,
    `sla_ms:               ${e.sla_ms}`,
    `price:                ${e.price}`,
    `premium:              ${e.premium}`,
    `refund_cap_per_hour:  ${cap(e.refund_cap_per_hour)}`,
    `refund_cap_per_call:  ${cap(e.refund_cap_per_call)}`,
    `refund_cap_per_batch: ${cap(e.refund_cap_per_batch)}`,
    `treasury_fee_bps:     ${e.treasury_fee_bps}`,
    `billing:              ${e.billing}`,
    `injected headers:     ${e.injected_headers.length > 0 ? e.injected_headers.map((h) => `${h}: (set)`).join(', ') : '-'}`,
    `response schema:      ${e.response_schema ? JSON.stringify(e.response_schema) : '-'}`,
  ];
}

export function endpointsTable(list: EndpointView[]): string {
  return table(
    ['ID', 'UPSTREAM', 'METHODS', 'TIMEOUT_MS', 'SLA_MS', 'PRICE', 'PREMIUM', 'BILLING'],
    list.map((e) => [e.id, e.upstream, e.methods.join(','), e.timeout_ms, e.sla_ms, e.price, e.premium, e.billing]),
  );
}
