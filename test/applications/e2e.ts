/**
 * End to end with real processes (`svcctl serve control`, `svcctl serve gateway`, svcctl
 * commands, all from the built CLI): an application sent twice is one application; approving
 * it issues a key that the gateway admits while the beta gate is on; a rejected application
 * gets no key; the plaintext key is in the approve answer only, never in the data dir or
 * control's logs.
 */
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isWellFormedKey } from '../../protocol/keys';
import { agentAnswers, merchantAnswers, submitJson } from '../fixtures/applications';
import { request, startStack } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

t.test('apply, approve, call the gateway with the delivered key; reject; duplicate', async (t) => {
  const stack = await startStack(t);
  const up = await startUpstream(t);
  await stack.addEndpoint({ id: 'alpha', upstream: `${up.url}/alpha` });
  const api = stack.control.urls.api!;

  const first = await submitJson(api, agentAnswers());
  t.equal(first.status, 201, first.text);
  const again = await submitJson(api, agentAnswers({ contact_name: 'ada  lovelace' }));
  t.equal(again.status, 200, 'the duplicate is recognised');
  t.equal(again.body.id, first.body.id, 'and answered with the same id');
  const merchant = await submitJson(api, merchantAnswers());
  t.equal(merchant.status, 201);

  const list = await stack.cli(['applications', 'list', '--json']);
  t.equal(list.code, 0, list.stderr);
  const apps = list.json().applications;
  t.same(
    apps.map((a: any) => a.id),
    [first.body.id, merchant.body.id],
    'two applications, the agent first',
  );
  t.equal(apps[0].submissions, 2);

  const approve = await stack.cli(['applications', 'approve', first.body.id, '--endpoint', 'alpha', '--json']);
  t.equal(approve.code, 0, approve.stderr);
  const approved = approve.json();
  const key: string = approved.key;
  t.ok(isWellFormedKey(key), 'the operator gets the key once');
  t.match(approved.delivery, { notifier: 'operator', status: 'shown_to_operator', deliver_to: { messaging_handle: 'telegram @ada' } });

  const reject = await stack.cli(['applications', 'reject', merchant.body.id, '--reason', 'not yet', '--json']);
  t.equal(reject.code, 0, reject.stderr);
  t.equal(reject.json().application.key_id, null);

  const gate = await stack.cli(['flag', 'set', 'beta_gate_enabled', 'on', '--note', 'beta opens', '--wait', '--json']);
  t.equal(gate.code, 0, gate.stderr);
  t.equal(gate.json().value, true);

  const call = (headers: Record<string, string>) =>
    request(stack.gateway, '/v1/alpha/echo', { body: '{}', headers: { 'content-type': 'application/json', ...headers } });
  const admitted = await call({ authorization: `Bearer ${key}` });
  t.equal(admitted.status, 200, 'the delivered key works on the gateway with the gate on');
  t.equal(up.requests.length, 1, 'and reached the upstream');
  const keyless = await call({});
  t.equal(keyless.status, 403, 'without a key: refused');
  t.equal(keyless.body.code, 'svc_auth_not_in_beta');

  const keys = await stack.cli(['keys', 'list', '--json']);
  t.equal(keys.code, 0);
  const all = keys.json().keys;
  t.same(
    all.map((k: any) => [k.id, k.application_id]),
    [[approved.key_id, first.body.id]],
    'one key, bound to the approved application; none for the rejected one',
  );

  const show = await stack.cli(['applications', 'show', first.body.id]);
  t.equal(show.code, 0);
  t.match(show.stdout, /status:\s+approved/);
  t.match(show.stdout, /delivery:\s+shown to the approving operator/);
  t.notOk(show.stdout.includes(key), 'show does not print the key');

  await stack.gateways[0]!.stop();
  await stack.control.stop();
  const needle = Buffer.from(key);
  const holding = filesUnder(stack.dataDir).filter((f) => readFileSync(f).includes(needle));
  t.same(holding, [], 'no file in the data dir holds the key');
  t.notOk(stack.control.stderr().includes(key), 'control’s logs do not hold it');
  t.ok(stack.control.stderr().includes('application key delivered'), 'the search covers control’s logs');
});
