/**
 * The ETag and body of the last answer per URL, so a read can send `If-None-Match` and reuse
 * the body on `304 Not Modified`. Bounded (least recently used out); the body is kept as
 * text and parsed again on reuse, so callers never share one mutable object.
 *
 * @see RFC 9110 §8.8.3 (ETag) and §13.1.2 (If-None-Match)
 */

/** Distinct URLs remembered per client. @default 128 */
export const DEFAULT_ETAG_MEMORY_ENTRIES = 128;

export interface Remembered {
  etag: string;
  text: string;
}

export class EtagMemory {
  private readonly entries = new Map<string, Remembered>();

  constructor(private readonly max = DEFAULT_ETAG_MEMORY_ENTRIES) {}

  get(url: string): Remembered | undefined {
    const hit = this.entries.get(url);
    if (hit !== undefined) {
      this.entries.delete(url);
      this.entries.set(url, hit);
    }
    return hit;
  }

  set(url: string, etag: string, text: string): void {
    this.entries.delete(url);
    this.entries.set(url, { etag, text });
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  forget(url: string): void {
    this.entries.delete(url);
  }
}
