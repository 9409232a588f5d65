/** How `svcctl operators` prints operators and a new token. */
import type { IssuedOperatorToken, OperatorView } from '../../../protocol/operators';
import { table } from '../../output';

export function operatorsTable(operators: readonly OperatorView[]): string {
  return table(
    ['NAME', 'SCOPES', 'STATUS', 'CREATED', 'LAST USED', 'EXPIRES', 'REVOKED', 'TOKENS'],
    operators.map((o) => [
      o.name,
      o.scopes.join(','),
      o.status,
      o.created_at,
      o.last_used_at ?? '-',
      o.expires_at ?? 'never',
      o.revoked_at ?? '-',
      o.tokens.map((t) => (t.expires_at === null ? t.token_id : `${t.token_id} (until ${t.expires_at})`)).join(', ') || '-',
    ]),
  );
}

/** The token, shown once, and how to use it. */
export function tokenText(issued: IssuedOperatorToken): string[] {
  return [
    '',
    `  ${issued.token}`,
    '',
    `token id   ${issued.token_id}`,
    `scopes     ${issued.scopes.join(', ')}`,
    `expires    ${issued.expires_at ?? 'never'}`,
    `Use it with svcctl --token-file FILE (a file holding only the token, mode 0600) or SVC_ADMIN_TOKEN.`,
  ];
}

/** What `operators add` prints, and `approvals approve` once an operator's add is approved. */
export const addedLines = (issued: IssuedOperatorToken): string[] => [
  `Added operator ${issued.name}. The token is shown once; hand it over now, it cannot be recovered:`,
  ...tokenText(issued),
];
