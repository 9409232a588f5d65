/**
 * Control → gateway propagation with real processes (docs/design.md §4): `--wait` returns only once
 * every connected gateway enforces the change; `svcctl status` shows what each gateway
 * applied; gateways keep enforcing their last-known-good state while control is down (also
 * across their own restart), and pick up changes again once control is back on its port.
 */
import t from 'tap';
import { GENEROUS_LIMITS, assertProblem, drained, health, request, startStack, waitFor } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';
import { generateKey } from '../../protocol/keys';

t.test('sync', async (t) => {
  const stack = await startStack(t, { gateways: 2, controlEnv: GENEROUS_LIMITS });
  const up = await startUpstream(t);
  await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base` });
  const keep = await stack.issueKey({ name: 'keeps working' });
  const doomed = await stack.issueKey({ name: 'revoked with --wait' });
  const late = await stack.issueKey({ name: 'revoked while a gateway restarts' });
  await stack.applied(late.version);
  const call = (gw: string, key: string | null, path = '/v1/ep/x') =>
    request(gw, path, { body: '{}', headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  const everyGateway = () => stack.gateways.map((g) => g.url);

  await t.test('flag set beta_gate_enabled on --wait: the next keyless call is 403 on every gateway', async (t) => {
    for (const gw of everyGateway()) t.equal((await call(gw, null)).status, 200, 'gate off: keyless passes');
    const set = await stack.cli(['flag', 'set', 'beta_gate_enabled', 'on', '--wait', '--json']);
    t.equal(set.code, 0, `flag set --wait: exit 0 ${set.stderr}`);
    for (const gw of everyGateway()) assertProblem(t, await call(gw, null), 403, 'svc_auth_not_in_beta', `${gw} right after --wait`);
    for (const gw of everyGateway()) t.equal((await call(gw, keep.key)).status, 200, 'a valid key still passes');
  });

  await t.test('keys revoke --wait: the very next call with that key is 403 on every gateway', async (t) => {
    for (const gw of everyGateway()) t.equal((await call(gw, doomed.key)).status, 200, 'valid before');
    const revoke = await stack.cli(['keys', 'revoke', doomed.id, '--wait']);
    t.equal(revoke.code, 0, `keys revoke --wait: exit 0 ${revoke.stderr}`);
    for (const gw of everyGateway()) assertProblem(t, await call(gw, doomed.key), 403, 'svc_auth_not_in_beta', `${gw} right after --wait`);
  });

  await t.test('svcctl status --json lists both gateways at the state version; both converged', async (t) => {
    const status = await stack.cli(['status', '--json']);
    t.equal(status.code, 0, status.stderr);
    const body = status.json<{ version: number; gateways: { id: string; connected: boolean; applied_version: number }[] }>();
    t.same(
      body.gateways.map((g) => ({ id: g.id, connected: g.connected, applied_version: g.applied_version })),
      stack.gatewayIds.map((id) => ({ id, connected: true, applied_version: body.version })),
      'every gateway connected and at the state version',
    );
    for (const gw of everyGateway())
      t.equal((await health(gw)).body.snapshot_version, body.version, `${gw} /health reports the state version`);
  });

  let version = await stack.version();

  await t.test('control killed: gateways keep enforcing their last-known-good state', async (t) => {
    await stack.killControl();
    for (const gw of everyGateway()) {
      await waitFor(async () => (await health(gw)).body.control_connected === false, `${gw} to notice control is gone`);
      const h = (await health(gw)).body;
      t.equal(h.status, 'ok');
      t.equal(h.snapshot_version, version, 'still on the last version');
      t.equal((await call(gw, keep.key)).status, 200, 'a valid key is admitted');
      assertProblem(t, await call(gw, doomed.key), 403, 'svc_auth_not_in_beta', 'the revoked key stays refused');
      assertProblem(t, await call(gw, generateKey()), 403, 'svc_auth_not_in_beta', 'an unknown key is refused');
      assertProblem(t, await call(gw, null), 403, 'svc_auth_not_in_beta', 'keyless is refused');
      t.ok((await health(gw)).body.journal_backlog >= 1, 'outcomes wait in the journal');
    }
  });

  await t.test('control restarted on the same port: gateways reconnect and pick up a later revoke', async (t) => {
    await stack.restartControl();
    await waitFor(async () => {
      const gws = (await stack.admin('GET', '/_admin/v1/gateways')).body.gateways as { connected: boolean; applied_version: number }[];
      return gws.length === 2 && gws.every((g) => g.connected && g.applied_version === version);
    }, 'control to see both gateways connected at the version they hold');
    // Nothing changed while control was down, so control has nothing to send on the new
    // streams; each gateway must still know that it is connected again.
    const reported = await Promise.all(
      everyGateway().map((gw) =>
        waitFor(async () => (await health(gw)).body.control_connected === true, `${gw} to report the reconnect`, 3_000).then(
          () => true,
          () => false,
        ),
      ),
    );
    t.same(reported, [true, true], 'every gateway’s /health reports control_connected once control has accepted its stream');
    const revoke = await stack.cli(['keys', 'revoke', keep.id, '--wait']);
    t.equal(revoke.code, 0, `revoke --wait after restart: exit 0 ${revoke.stderr}`);
    for (const gw of everyGateway())
      assertProblem(t, await call(gw, keep.key), 403, 'svc_auth_not_in_beta', `${gw} enforces the new revoke`);
    for (const gw of everyGateway()) await drained(gw);
    t.pass('outcomes journaled while control was down were shipped');
    version = await stack.version();
  });

  await t.test('a gateway restarted while control is down serves from its last-known-good snapshot', async (t) => {
    await stack.killControl();
    await stack.killGateway(0);
    const gw = (await stack.restartGateway(0)).url;
    const h = (await health(gw)).body;
    t.equal(h.ready, true, 'ready without control');
    t.equal(h.control_connected, false);
    t.equal(h.snapshot_version, version, 'at the version it last applied (snapshot + deltas)');
    t.equal((await call(gw, late.key)).status, 200, 'a valid key is admitted');
    t.equal((await call(gw, late.key, '/ep/y')).status, 200, 'on both path forms');
    assertProblem(t, await call(gw, generateKey()), 403, 'svc_auth_not_in_beta', 'an unknown key');
    assertProblem(
      t,
      await call(gw, keep.key),
      403,
      'svc_auth_not_in_beta',
      'the key revoked after control’s restart (a delta) stays revoked',
    );
    assertProblem(t, await call(gw, doomed.key), 403, 'svc_auth_not_in_beta', 'the key revoked first');
    assertProblem(t, await call(gw, null), 403, 'svc_auth_not_in_beta', 'the gate flag survived too');
  });
});
