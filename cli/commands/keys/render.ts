/** Human rendering of keys, shared by the keys commands. */
import type { KeyView } from '../../../protocol/admin';
import { formatRateLimit } from '../../../protocol/units';
import { table } from '../../output';

export function keyLines(key: KeyView): string[] {
  return [
    `id:          ${key.id}`,
    `name:        ${key.name ?? '-'}`,
    `account:     ${key.account_id}`,
    `prefix:      ${key.prefix}…`,
    `status:      ${key.status}`,
    `created:     ${key.created_at}`,
    `expires:     ${key.expires_at ?? 'never'}`,
    ...(key.revoked_at ? [`revoked:     ${key.revoked_at}`] : []),
    `wallet:      ${key.wallet ?? '-'}`,
    `endpoints:   ${key.endpoints.length > 0 ? key.endpoints.join(', ') : 'all'}`,
    `limit:       ${key.limit ? formatRateLimit(key.limit) : 'default'}`,
    ...(key.lift ? [`lift:        ${formatRateLimit(key.lift)} until ${key.lift.until}`] : []),
    ...(key.secrets.length > 1
      ? [`secrets:     ${key.secrets.map((s) => `${s.prefix}…${s.expires_at ? ` (until ${s.expires_at})` : ''}`).join(', ')}`]
      : []),
  ];
}

export function keysTable(keys: readonly KeyView[]): string {
  return table(
    ['ID', 'NAME', 'PREFIX', 'STATUS', 'ENDPOINTS', 'LIMIT', 'EXPIRES', 'CREATED'],
    keys.map((k) => [
      k.id,
      k.name,
      `${k.prefix}…`,
      k.status,
      k.endpoints.length > 0 ? k.endpoints.join(',') : 'all',
      k.lift ? `${formatRateLimit(k.lift)} (lifted)` : k.limit ? formatRateLimit(k.limit) : 'default',
      k.expires_at ?? 'never',
      k.created_at,
    ]),
  );
}
