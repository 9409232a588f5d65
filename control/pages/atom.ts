/**
 * Atom 1.0 (RFC 4287), the format of every feed of both listeners: the public API's and the
 * indexer's `/changelog.atom` and `/status.atom` (`../public/pages/feeds.ts`), and the
 * indexer's `/receipts.atom` (`../indexer/pages/receipts-feed.ts`).
 *
 * Ids are `urn:uuid:` names derived (HMAC-SHA256) from the install's public id secret and a
 * name of the entry (the changelog entry's number, …), so an entry keeps its id across
 * requests, restarts and the two hosts, and no two installs share one. Links are absolute.
 */
import { createHmac } from 'node:crypto';

export const ATOM_CONTENT_TYPE = 'application/atom+xml; charset=utf-8';
export const ATOM_NS = 'http://www.w3.org/2005/Atom';

/** Headers of every feed besides its type: any page may read it, nothing in it loads or runs. */
export const FEED_HEADERS = {
  'access-control-allow-origin': '*',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

export interface AtomEntry {
  id: string;
  title: string;
  /** ISO 8601. */
  updated: string;
  content: string;
  category?: string;
  /** Where the entry is shown in HTML. */
  link?: string;
}

export interface AtomFeed {
  id: string;
  title: string;
  subtitle: string;
  updated: string;
  self: string;
  alternate: string;
  entries: readonly AtomEntry[];
}

const NOT_XML =
  // eslint-disable-next-line no-control-regex -- the control characters XML 1.0 cannot hold are what it looks for
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Text as XML character data or an attribute value: escaped, and characters XML 1.0 cannot hold replaced by U+FFFD. */
export function xmlText(value: string): string {
  return value
    .replace(NOT_XML, '\ufffd')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A stable `urn:uuid:` (RFC 9562 version 8, name-based) for `name` under `secret`. */
export function feedUuid(secret: Buffer, name: string): string {
  const b = createHmac('sha256', secret).update(`atom:${name}`).digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `urn:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function renderAtom(feed: AtomFeed): string {
  const entries = feed.entries
    .map(
      (e) => `<entry>
<id>${xmlText(e.id)}</id>
<title type="text">${xmlText(e.title)}</title>
<updated>${xmlText(e.updated)}</updated>
${e.category ? `<category term="${xmlText(e.category)}"/>\n` : ''}${e.link ? `<link rel="alternate" type="text/html" href="${xmlText(e.link)}"/>\n` : ''}<content type="text">${xmlText(e.content)}</content>
</entry>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="${ATOM_NS}">
<id>${xmlText(feed.id)}</id>
<title type="text">${xmlText(feed.title)}</title>
<subtitle type="text">${xmlText(feed.subtitle)}</subtitle>
<updated>${xmlText(feed.updated)}</updated>
<author><name>svc operators</name></author>
<generator>svc</generator>
<link rel="self" type="application/atom+xml" href="${xmlText(feed.self)}"/>
<link rel="alternate" type="text/html" href="${xmlText(feed.alternate)}"/>
${entries}
</feed>
`;
}

/** The first line of `text`, cut to `max` characters, as an entry title. */
export function titleOf(text: string, max = 120): string {
  const line = text.split(/\r?\n/, 1)[0]!.trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** Entries to show per feed. @default 50 */
export const FEED_ENTRIES = 50;
