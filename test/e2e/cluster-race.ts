/**
 * Two control processes on one PostgreSQL database, the same admin change fired at both at
 * once, many times: rotating one key, revoking one key, rotating and revoking one key, setting
 * one flag (to the same and to different values), adding, updating (two fields) and removing one
 * endpoint. The
 * store's writer lock (`control/store/pg/store.ts` `mutate`) runs the changes one at a time, so
 * every pair must end as some serial order of the two would: each request succeeds or fails
 * with a problem+json code (never a 500), the loser of a pair that a serial order would refuse
 * or find already done is told so (409, 404 or `changed: false`), the state read through
 * either control is the same, the audit log has exactly one row per change made, and the state
 * versions handed out form one gapless sequence without duplicates.
 */
import t, { type Test } from 'tap';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE } from '../../control/bootstrap';
import { METRICS_TOKEN_FILE } from '../../protocol/bearer';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { type HttpResult, request, type ServiceProcess, startControlProcess, testdirAfterTeardowns } from '../fixtures/stack';

/** Pairs fired per scenario. */
const ROUNDS = 12;
const GRACE_S = 3600;

interface KeyBody {
  id: string;
  key?: string;
  prefix: string;
  status: string;
  secrets: { prefix: string; expires_at: string | null }[];
  version?: number;
  changed?: boolean;
}

interface AuditEntry {
  action: string;
  target: string | null;
  detail: Record<string, unknown>;
}

t.test('two controls on one database, the same change through both at once', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const databaseUrl = await createDatabase(t);
  const dir = testdirAfterTeardowns(t);
  const dirA = join(dir, 'control-a');
  const dirB = join(dir, 'control-b');
  const env = { SVC_DATABASE_URL: databaseUrl };
  const a = await startControlProcess(t, { dataDir: dirA, env });
  // The second control must accept the same tokens: it reads them from its own data dir.
  mkdirSync(dirB, { recursive: true, mode: 0o700 });
  for (const file of [ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE, METRICS_TOKEN_FILE]) copyFileSync(join(dirA, file), join(dirB, file));
  const b = await startControlProcess(t, { dataDir: dirB, env });
  const token = readFileSync(join(dirA, ADMIN_TOKEN_FILE), 'utf8').trim();

  /** Every state version an answer handed out as the version of its change. */
  const versions: number[] = [];
  const admin = async (control: ServiceProcess, method: string, path: string, body?: unknown): Promise<HttpResult> => {
    const res = await request(control.url, path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (res.status >= 500) t.fail(`${method} ${path}: ${res.status} ${res.text}`);
    return res;
  };
  /** A change answered 200/201: its version counts, unless the answer says nothing changed. */
  const changed = (res: HttpResult): boolean => {
    const made = (res.status === 200 || res.status === 201) && res.body?.changed !== false;
    if (made && typeof res.body?.version === 'number') versions.push(res.body.version as number);
    return made;
  };
  /** A refusal: problem+json with `code`. */
  const refused = (t: Test, res: HttpResult, status: number, code: string, what: string) => {
    t.equal(res.status, status, what, { body: res.text });
    t.match(String(res.headers['content-type']), /^application\/problem\+json/, `${what}: problem+json`);
    t.equal(res.body?.code, code, `${what}: ${code}`);
  };
  const audit = async (): Promise<AuditEntry[]> =>
    ((await admin(a, 'GET', '/_admin/v1/audit?limit=10000')).body as { entries: AuditEntry[] }).entries;
  const auditCount = (entries: AuditEntry[], action: string, target: string) =>
    entries.filter((e) => e.action === action && e.target === target).length;
  const view = async (control: ServiceProcess, id: string) => (await admin(control, 'GET', `/_admin/v1/keys/${id}`)).body as KeyBody;
  const issue = async (name: string): Promise<KeyBody> => {
    const res = await admin(a, 'POST', '/_admin/v1/keys', { name });
    t.ok(changed(res), `issued ${name}`);
    return res.body as KeyBody;
  };
  const startVersion = (await admin(a, 'GET', '/_admin/v1/status')).body.version as number;

  await t.test('rotating one key through both', async (t) => {
    const key = await issue('rotated');
    const rotations: KeyBody[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const pair = await Promise.all([a, b].map((c) => admin(c, 'POST', `/_admin/v1/keys/${key.id}/rotate`, { grace_seconds: GRACE_S })));
      for (const res of pair) {
        t.equal(res.status, 200, `a rotation of an active key succeeds: ${res.text}`);
        if (changed(res)) rotations.push(res.body as KeyBody);
      }
    }
    rotations.sort((x, y) => x.version! - y.version!);
    const viaA = await view(a, key.id);
    t.same(await view(b, key.id), viaA, 'the same key through either control');
    t.equal(viaA.secrets.length, 2 * ROUNDS + 1, 'the first secret and one per rotation, all still accepted');
    t.same(
      viaA.secrets.filter((s) => s.expires_at === null).map((s) => s.prefix),
      [rotations.at(-1)!.prefix],
      'the only secret without an end is the last rotation’s',
    );
    t.same(
      viaA.secrets.map((s) => s.prefix).sort(),
      [key.prefix, ...rotations.map((r) => r.prefix)].sort(),
      'every secret handed out is accepted during its grace',
    );
    const entries = (await audit()).filter((e) => e.action === 'keys.rotate' && e.target === key.id).reverse();
    t.equal(entries.length, 2 * ROUNDS, 'one audit row per rotation');
    // In a serial order each rotation replaces the secret the one before it made.
    const chain = entries.map((e) => [e.detail.old_prefix, e.detail.prefix]);
    const serial = rotations.map((r, i) => [i === 0 ? key.prefix : rotations[i - 1]!.prefix, r.prefix]);
    t.same(chain, serial, 'each audit row names the secret its rotation replaced');
  });

  await t.test('revoking one key through both', async (t) => {
    const keys = await Promise.all(Array.from({ length: ROUNDS }, (_, i) => issue(`revoked ${i}`)));
    await Promise.all(
      keys.map(async (key) => {
        const pair = await Promise.all([a, b].map((c) => admin(c, 'POST', `/_admin/v1/keys/${key.id}/revoke`)));
        for (const res of pair) t.equal(res.status, 200, `a revoke answers 200: ${res.text}`);
        t.equal(pair.filter(changed).length, 1, 'one revoke changed the key, the other found it revoked');
      }),
    );
    const entries = await audit();
    for (const key of keys) {
      t.equal(auditCount(entries, 'keys.revoke', key.id), 1, 'one audit row per revoked key');
      const viaA = await view(a, key.id);
      t.equal(viaA.status, 'revoked');
      t.same(await view(b, key.id), viaA, 'the same key through either control');
    }
  });

  await t.test('rotating and revoking one key at once', async (t) => {
    const keys = await Promise.all(Array.from({ length: ROUNDS }, (_, i) => issue(`rotated and revoked ${i}`)));
    let rotated = 0;
    await Promise.all(
      keys.map(async (key) => {
        const [rotate, revoke] = await Promise.all([
          admin(a, 'POST', `/_admin/v1/keys/${key.id}/rotate`, { grace_seconds: GRACE_S }),
          admin(b, 'POST', `/_admin/v1/keys/${key.id}/revoke`),
        ]);
        t.equal(revoke.status, 200, `the revoke succeeds: ${revoke.text}`);
        t.ok(changed(revoke), 'and changes the key');
        if (rotate.status === 200) rotated += Number(changed(rotate));
        else refused(t, rotate, 409, 'svc_conflict', 'a rotation after the revoke');
      }),
    );
    const entries = await audit();
    t.equal(
      keys.reduce((n, key) => n + auditCount(entries, 'keys.rotate', key.id), 0),
      rotated,
      'one audit row per rotation that succeeded',
    );
    for (const key of keys) {
      const viaA = await view(a, key.id);
      t.equal(viaA.status, 'revoked');
      t.same(viaA.secrets, [], 'a revoked key has no secret left, whichever came first');
      t.same(await view(b, key.id), viaA, 'the same key through either control');
    }
  });

  await t.test('setting one flag through both', async (t) => {
    const flag = '/_admin/v1/flags/maintenance_mode';
    const changelog = async () =>
      ((await admin(a, 'GET', '/_admin/v1/changelog?limit=1000')).body as { entries: { flag: string | null }[] }).entries.filter(
        (e) => e.flag === 'maintenance_mode',
      ).length;
    const flagAudit = async () => (await audit()).filter((e) => e.action === 'flags.set' && e.target === 'maintenance_mode').length;
    let made = 0;
    let value = false;
    for (let r = 0; r < ROUNDS; r++) {
      // The same value through both: one of them sets it.
      const same = await Promise.all([a, b].map((c) => admin(c, 'PUT', flag, { value: !value, note: `round ${r}` })));
      for (const res of same) t.equal(res.status, 200, res.text);
      t.equal(same.filter(changed).length, 1, 'one set the flag, the other found it set');
      value = !value;
      made += 1;
      // Different values: whichever came last holds.
      const [toTrue, toFalse] = await Promise.all([
        admin(a, 'PUT', flag, { value: true, note: `round ${r}, on` }),
        admin(b, 'PUT', flag, { value: false, note: `round ${r}, off` }),
      ]);
      t.equal(toTrue.status, 200, toTrue.text);
      t.equal(toFalse.status, 200, toFalse.text);
      const changes = [toTrue, toFalse].filter(changed).sort((x, y) => (x.body.version as number) - (y.body.version as number));
      for (const res of changes) {
        t.not(res.body.value, value, 'a change flips the value it found');
        value = res.body.value as boolean;
      }
      made += changes.length;
      const viaA = (await admin(a, 'GET', flag)).body as { value: boolean };
      t.equal(viaA.value, value, 'the flag holds the value of the last change');
      t.same((await admin(b, 'GET', flag)).body, viaA, 'the same flag through either control');
    }
    t.equal(await flagAudit(), made, 'one audit row per change');
    t.equal(await changelog(), made, 'one changelog entry per change');
  });

  await t.test('adding and removing one endpoint through both', async (t) => {
    const ids = Array.from({ length: ROUNDS }, (_, i) => `race-${i}`);
    await Promise.all(
      ids.map(async (id) => {
        const body = { id, upstream: 'http://127.0.0.1:9/base' };
        const added = await Promise.all([a, b].map((c) => admin(c, 'POST', '/_admin/v1/endpoints', body)));
        t.equal(added.filter(changed).length, 1, `one add of ${id} succeeds`);
        const loser = added.find((res) => res.status !== 201);
        if (loser) refused(t, loser, 409, 'svc_conflict', 'the other finds it added');
        // Two updates of different fields at once: both land, whichever ran first.
        const patched = await Promise.all([
          admin(a, 'PATCH', `/_admin/v1/endpoints/${id}`, { price: 7 }),
          admin(b, 'PATCH', `/_admin/v1/endpoints/${id}`, { sla_ms: 1234 }),
        ]);
        for (const res of patched) t.ok(changed(res), `an update of ${id} succeeds: ${res.text}`);
        const fields = (e: Record<string, unknown>) => ({ price: e.price, sla_ms: e.sla_ms });
        const viaA = (await admin(a, 'GET', `/_admin/v1/endpoints/${id}`)).body;
        t.same(fields(viaA), { price: 7, sla_ms: 1234 }, `neither update of ${id} is lost`);
        t.same((await admin(b, 'GET', `/_admin/v1/endpoints/${id}`)).body, viaA, 'the same endpoint through either control');
        const removed = await Promise.all([a, b].map((c) => admin(c, 'DELETE', `/_admin/v1/endpoints/${id}`)));
        t.equal(removed.filter(changed).length, 1, `one removal of ${id} succeeds`);
        const late = removed.find((res) => res.status !== 200);
        if (late) refused(t, late, 404, 'svc_not_found', 'the other finds it gone');
      }),
    );
    const entries = await audit();
    for (const id of ids) {
      t.equal(auditCount(entries, 'endpoints.add', id), 1, `one audit row for adding ${id}`);
      t.equal(auditCount(entries, 'endpoints.update', id), 2, `one audit row per update of ${id}`);
      t.equal(auditCount(entries, 'endpoints.remove', id), 1, `one audit row for removing ${id}`);
    }
    const listed = (await admin(a, 'GET', '/_admin/v1/endpoints')).body;
    t.same((await admin(b, 'GET', '/_admin/v1/endpoints')).body, listed, 'the same endpoints through either control');
    t.same(listed.endpoints, [], 'none left');
  });

  await t.test('the state versions handed out', async (t) => {
    const sorted = [...versions].sort((x, y) => x - y);
    t.equal(new Set(sorted).size, sorted.length, 'no version handed out twice');
    const finalA = (await admin(a, 'GET', '/_admin/v1/status')).body.version as number;
    t.equal((await admin(b, 'GET', '/_admin/v1/status')).body.version, finalA, 'both controls are at the same version');
    t.same(
      sorted,
      Array.from({ length: finalA - startVersion }, (_, i) => startVersion + 1 + i),
      'one version per change, without a gap',
    );
  });
});
