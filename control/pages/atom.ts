/**
 * Atom 1.0 feeds (RFC 4287), served on the public API and on the indexer: `/changelog.atom`,
 * one entry per changelog entry, and `/status.atom`, the status page's incident history (each
 * maintenance period and each day a provider was HIGH_RISK); on the indexer only, `/receipts.atom`, one entry per settlement batch with
 * its receipt's hash, so feed readers and archives keep a copy of the chain the operator cannot
 * take back.
 *
 * Ids are `urn:uuid:` names derived (HMAC-SHA256) from the install's public id secret and the
 * changelog entry's number, so an entry keeps its id across requests, restarts and the two
 * hosts, and no two installs share one. Links are absolute: the pages they point at are on the
 * public API whichever host serves the feed, and `self` is the copy that was fetched.
 */
import { createHmac } from 'node:crypto';
import type { ChangelogEntry } from '../../protocol/admin';
import type { Receipt } from '../../protocol/receipts';
import { receiptHash } from '../../protocol/receipts-verify';
import type { Incident } from '../public/pages/history';
import { duration } from './layout';

export const ATOM_CONTENT_TYPE = 'application/atom+xml; charset=utf-8';
export const ATOM_NS = 'http://www.w3.org/2005/Atom';

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

/** `/changelog.atom`: every public changelog entry (newest first), as the status page lists them. */
export function changelogFeed(
  secret: Buffer,
  entries: readonly ChangelogEntry[],
  fallbackUpdated: string,
  feedBase: string,
  apiBase: string,
): AtomFeed {
  return {
    id: feedUuid(secret, 'feed:changelog'),
    title: 'svc changelog',
    subtitle: 'Flag changes and notices from the svc operators',
    updated: entries[0]?.at ?? fallbackUpdated,
    self: `${feedBase}/changelog.atom`,
    alternate: `${apiBase}/status`,
    entries: entries.map((e) => ({
      id: feedUuid(secret, `changelog:${e.id}`),
      title: titleOf(e.text),
      updated: e.at,
      content: e.text,
      category: e.kind,
      link: `${apiBase}/status`,
    })),
  };
}

/** An incident's span in words: `2030-01-01 10:00 UTC to 2030-01-01 11:40 UTC (1 h 40 min)`. */
function span(i: Incident): string {
  const at = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;
  return `${at(i.start)} to ${i.end === null ? 'now (ongoing)' : at(i.end)} (${duration(i.duration_ms)}${i.end === null ? ' so far' : ''})`;
}

/**
 * `/status.atom`: the incident history of the status page, newest first: every maintenance
 * period (with the operators' note) and every day a provider was HIGH_RISK. An entry's id
 * stays the same while it lasts and after; it is updated when it ends.
 */
export function incidentsFeed(
  secret: Buffer,
  incidents: readonly Incident[],
  fallbackUpdated: string,
  feedBase: string,
  apiBase: string,
): AtomFeed {
  const entries = incidents.slice(0, FEED_ENTRIES).map((i): AtomEntry => {
    const who = i.provider === null ? '' : (i.provider.display_name ?? i.provider.id);
    const title =
      i.kind === 'maintenance'
        ? `Maintenance${i.end === null ? ' (ongoing)' : ''}`
        : `HIGH_RISK: ${who} on ${i.start.slice(0, 10)}${i.end === null ? ' (today so far)' : ''}`;
    const note = i.note === null ? '' : i.kind === 'maintenance' ? `\nNote from the operators: ${i.note}` : `\n${i.note}`;
    return {
      id: feedUuid(secret, `status:${i.key}`),
      title,
      updated: i.end ?? i.start,
      content: `${span(i)}${note}`,
      category: i.kind === 'maintenance' ? 'maintenance' : 'high-risk',
      link: `${apiBase}/status`,
    };
  });
  return {
    id: feedUuid(secret, 'feed:status'),
    title: 'svc incidents',
    subtitle: 'Maintenance periods and the days a provider was HIGH_RISK',
    updated: entries.reduce((latest, e) => (e.updated > latest ? e.updated : latest), entries[0]?.updated ?? fallbackUpdated),
    self: `${feedBase}/status.atom`,
    alternate: `${apiBase}/status`,
    entries,
  };
}

/**
 * `/receipts.atom` (indexer): one entry per settlement batch (the latest {@link FEED_ENTRIES},
 * newest first), its title and content naming the receipt's hash (the `prev` of the next
 * receipt, the `hash` of a checkpoint at that batch) and the receipt itself as served. A copy
 * saved by a feed reader or an archive is evidence: a batch rewritten later has another hash.
 */
export function receiptsFeed(secret: Buffer, receipts: readonly Receipt[], fallbackUpdated: string, indexerBase: string): AtomFeed {
  return {
    id: feedUuid(secret, 'feed:receipts'),
    title: 'svc settlement receipts',
    subtitle: 'One entry per settlement batch, with the hash of its signed receipt',
    updated: receipts[0]?.settled_at ?? fallbackUpdated,
    self: `${indexerBase}/receipts.atom`,
    alternate: `${indexerBase}/activity`,
    entries: receipts.map((r) => {
      const hash = receiptHash(r);
      return {
        id: feedUuid(secret, `receipt:${r.batch}`),
        title: `Batch ${r.batch}: receipt hash ${hash}`,
        updated: r.settled_at,
        content: `batch ${r.batch}\nhash ${hash}\nreceipt ${indexerBase}/api/receipts/${r.batch}\n${JSON.stringify(r)}`,
        category: 'receipt',
      };
    }),
  };
}
