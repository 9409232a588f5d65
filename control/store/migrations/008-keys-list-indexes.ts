/**
 * 8: indexes for listing keys a page at a time (`GET /_admin/v1/keys?limit=&cursor=&status=`):
 * keyset pagination newest first on (created_at, id), over all keys or within one stored
 * status, so each page costs the same however deep it is and however many keys there are.
 * The status index also holds `expires_at`, so the `active` / `expired` filters (decided by the
 * clock) scan it without reading the table.
 */
export default `
  CREATE INDEX keys_by_created ON keys (created_at, id);
  CREATE INDEX keys_by_status_created ON keys (status, created_at, id, expires_at);
`;
