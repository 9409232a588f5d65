/**
 * Operators on two controls sharing one PostgreSQL database: an operator added through one
 * control opens the admin API of the other with its scopes, a rotation or a revocation through
 * either holds on both at the next request, though both controls had just accepted the token
 * (nothing is cached between requests), root's revocation refused on both, and the audit rows each control
 * writes name the operator and its token.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { join } from 'node:path';
import { startTestControl } from '../fixtures/control';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';

if (!skipWithoutPostgres(t)) {
  t.test('an operator added, rotated and revoked through one control holds on the other at once', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const a = await startTestControl(t, { dataDir: join(root, 'a'), flags: { databaseUrl } });
    const b = await startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl } });
    const rootToken = a.adminToken;
    const onA = (method: string, path: string, body: unknown, token: string) => a.admin(method, path, body, token);
    const onB = (method: string, path: string, body: unknown, token: string) => b.admin(method, path, body, token);

    const added = await onA('POST', '/_admin/v1/operators', { name: 'alice', scopes: ['read', 'keys'] }, rootToken);
    t.equal(added.status, 201);
    const alice = added.body.token as string;

    const issued = await onB('POST', '/_admin/v1/keys', { name: 'through b' }, alice);
    t.equal(issued.status, 201, 'the operator added through A works on B');
    t.equal((await onA('GET', '/_admin/v1/status', undefined, alice)).status, 200, 'and on A');
    const refused = await onB('PUT', '/_admin/v1/flags/maintenance_mode', { value: true }, alice);
    t.equal(refused.status, 403, 'with its scopes only');
    t.equal(refused.body.code, 'svc_forbidden_scope');

    const rotated = await onB('POST', '/_admin/v1/operators/alice/rotate', {}, rootToken);
    t.equal(rotated.status, 200, 'rotated through B');
    const aliceAgain = rotated.body.token as string;
    t.equal((await onA('GET', '/_admin/v1/status', undefined, alice)).status, 401, 'the old token is dead on A at once');
    t.equal((await onA('GET', '/_admin/v1/status', undefined, aliceAgain)).status, 200, 'the new one works on A');
    t.equal((await onB('GET', '/_admin/v1/status', undefined, aliceAgain)).status, 200, 'and on B');

    const lead = await onB('POST', '/_admin/v1/operators', { name: 'lead', scopes: ['operators', 'read', 'keys'] }, rootToken);
    t.equal(lead.status, 201);
    const revoked = await onA('POST', '/_admin/v1/operators/alice/revoke', undefined, lead.body.token);
    t.equal(revoked.status, 200, 'revoked through A by another operator');
    const dead = await onB('GET', '/_admin/v1/status', undefined, aliceAgain);
    t.equal(dead.status, 401, 'and refused on B at once');
    t.match(dead.body.detail, /alice is revoked/);

    for (const [on, name] of [
      [onA, 'A'],
      [onB, 'B'],
    ] as const) {
      const refusedRoot = await on('POST', '/_admin/v1/operators/root/revoke', undefined, lead.body.token);
      t.equal(refusedRoot.status, 409, `root is not revoked through ${name}`);
      t.equal(refusedRoot.body.reason, 'root');
      t.equal((await on('GET', '/_admin/v1/status', undefined, rootToken)).status, 200, `the shared root token still works on ${name}`);
    }

    const audit = await onB('GET', '/_admin/v1/audit?action=operators', undefined, lead.body.token);
    t.same(
      audit.body.entries.map((e: { actor: string; action: string; target: string; token_id: string }) => [
        e.actor,
        e.action,
        e.target,
        e.token_id,
      ]),
      [
        ['lead', 'operators.revoke', 'alice', lead.body.token_id],
        ['root', 'operators.add', 'lead', 'root'],
        ['root', 'operators.rotate', 'alice', 'root'],
        ['root', 'operators.add', 'alice', 'root'],
      ],
      'both controls’ audit rows, each naming the operator and its token',
    );
    const keys = await onA('GET', '/_admin/v1/audit?action=keys.issue', undefined, lead.body.token);
    t.same(
      keys.body.entries.map((e: { actor: string; token_id: string }) => [e.actor, e.token_id]),
      [['alice', added.body.token_id]],
    );
  });
}
