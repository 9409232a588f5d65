/**
 * The response-schema check on a 2xx body, for endpoints that carry a schema (docs/design.md §6
 * `schema_mismatch`). The body streams to the caller untouched; a copy of its chunks is kept
 * up to a cap and checked once the upstream body has ended. Nothing here runs for endpoints
 * without a schema.
 *
 * - A body larger than the cap (by `Content-Length`, or once more bytes than the cap have
 *   arrived) is not checked: the copy is dropped at once and the verdict is `too_large`.
 * - `Content-Encoding` gzip, x-gzip, deflate and br are decoded (output bounded by the cap);
 *   any other encoding, or several stacked, is `encoding` (not checked).
 * - A body that is not JSON (after an optional UTF-8 BOM) fails the schema: the endpoint
 *   promised JSON of that shape.
 */
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { SchemaValidator } from '../../protocol/response-schema';
import type { SchemaVerdict } from './classify';
import { headerListValue, type HeaderList } from '../proxy/index';

/** Most body bytes (as received, and after decoding) kept for the check. @default 256 KiB */
export const SCHEMA_BODY_CAP_BYTES = 256 * 1024;

/** What the check found; `too_large` and `encoding` mean the body was not checked. */
export type BodyCheckResult = 'valid' | 'invalid' | 'too_large' | 'encoding';

export const verdictOf = (result: BodyCheckResult): SchemaVerdict =>
  result === 'valid' ? 'valid' : result === 'invalid' ? 'invalid' : 'unchecked';

type Decoder = ((input: Buffer, options: { maxOutputLength: number }) => Buffer) | null;

const DECODERS: Readonly<Record<string, Decoder>> = {
  identity: null,
  gzip: gunzipSync,
  'x-gzip': gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};

/** Responses that carry no body by definition, so there is nothing to check. */
export function hasCheckableBody(method: string, status: number): boolean {
  return method !== 'HEAD' && status >= 200 && status < 300 && status !== 204 && status !== 205;
}

/** Collects one response body's chunks (bounded) and checks them at the end. */
export class BodyCheck {
  private chunks: Buffer[] | null = [];
  private bytes = 0;
  private early: BodyCheckResult | null = null;
  private readonly decoder: Decoder | undefined;

  constructor(
    private readonly validate: SchemaValidator,
    headers: Readonly<HeaderList>,
    private readonly capBytes: number = SCHEMA_BODY_CAP_BYTES,
  ) {
    const encoding = headerListValue(headers, 'content-encoding')?.trim().toLowerCase() ?? 'identity';
    this.decoder = DECODERS[encoding === '' ? 'identity' : encoding];
    const declared = Number(headerListValue(headers, 'content-length'));
    if (this.decoder === undefined) this.stop('encoding');
    else if (Number.isFinite(declared) && declared > capBytes) this.stop('too_large');
  }

  /** Keep a copy of a chunk the caller is being sent. */
  readonly chunk = (data: Buffer): void => {
    if (this.chunks === null) return;
    this.bytes += data.length;
    if (this.bytes > this.capBytes) this.stop('too_large');
    else this.chunks.push(data);
  };

  /** The verdict on everything received. Call once, when the upstream body has ended. */
  finish(): BodyCheckResult {
    if (this.early !== null) return this.early;
    const raw = this.chunks!.length === 1 ? this.chunks![0]! : Buffer.concat(this.chunks!, this.bytes);
    this.chunks = null;
    let body: Buffer;
    try {
      body = this.decoder ? this.decoder(raw, { maxOutputLength: this.capBytes }) : raw;
    } catch (err) {
      // Output over the cap is "too large to check"; a corrupt stream reaches the caller corrupt.
      return (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError ? 'too_large' : 'invalid';
    }
    let value: unknown;
    try {
      let text = body.toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      value = JSON.parse(text);
    } catch {
      return 'invalid';
    }
    return this.validate(value) === null ? 'valid' : 'invalid';
  }

  private stop(result: BodyCheckResult): void {
    this.early = result;
    this.chunks = null;
  }
}
