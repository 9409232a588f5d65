/**
 * Key delivery over the webhook notifier: a signed POST (HMAC-SHA256 over "<timestamp>.<body>")
 * that a local receiver verifies; retries with backoff on 5xx and connection failures; no
 * retry on other 4xx; a receiver that stays down leaves the application approved with its key
 * active and revocable, and says so in the approve answer, `applications show` and the
 * delivery log. The key is in the delivered message only: never in the database files, the
 * logs, the approve answer or the delivery log.
 */
import t, { type Test } from 'tap';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { ConfigError, loadConfig } from '../../config/load';
import { hashKey, isWellFormedKey } from '../../protocol/keys';
import { runCli } from '../fixtures/cli';
import { captureLogs, propertyNames, startTestControl } from '../fixtures/control';
import { agentAnswers, merchantAnswers, submitJson } from '../fixtures/applications';
import { forEachStore } from '../fixtures/stores';

const SECRET = 'whsec_test_0123456789abcdef';

interface Received {
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  signatureValid: boolean;
}

/** A receiver that checks the signature independently and answers with scripted statuses. */
async function startReceiver(t: Test, statuses: number[] = []): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const timestamp = String(req.headers['x-svc-timestamp'] ?? '');
      const given = String(req.headers['x-svc-signature'] ?? '');
      const expected = 'sha256=' + createHmac('sha256', SECRET).update(`${timestamp}.${raw}`).digest('hex');
      const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) < 300;
      const signatureValid = fresh && given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
      received.push({ headers: req.headers, raw, body: JSON.parse(raw), signatureValid });
      const status = signatureValid ? (statuses.shift() ?? 204) : 401;
      res.writeHead(status, { 'content-type': 'text/plain' });
      // A receiver that echoes what it got must not get the key into svc's records.
      res.end(status >= 400 ? `rejected: ${raw}` : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const close = () => new Promise<void>((r) => server.close(() => r()));
  t.teardown(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/svc?token=abc`, received, close };
}

async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}/hook`;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every row of every table of a PostgreSQL database, as text: what the data dir's files are on SQLite. */
async function databaseRows(url: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public'`,
    );
    const rows: string[] = [];
    for (const { name } of tables.rows) {
      for (const { row } of (await client.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`)).rows) rows.push(row);
    }
    return rows.join('\n');
  } finally {
    await client.end();
  }
}

function webhookFlags(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'applications.notifier': 'webhook',
    'applications.webhookUrl': url,
    'applications.webhookSecret': SECRET,
    'applications.webhookRetries': 2,
    'applications.webhookBackoffMs': 20,
    'applications.webhookTimeoutMs': 2000,
    'applications.marketUrl': 'https://market.example',
    ...extra,
  };
}

forEachStore(t, (t, kind) => {
  t.test('delivered: a signed message the receiver verifies; the key is nowhere else', async (t) => {
    const receiver = await startReceiver(t);
    const logs = captureLogs();
    const control = await startTestControl(t, { store: kind, flags: webhookFlags(receiver.url), log: logs.log });
    await control.admin('POST', '/_admin/v1/endpoints', { id: 'alpha', upstream: 'http://127.0.0.1:9/alpha' });
    const { body: receipt } = await submitJson(control.urls.api, agentAnswers());

    const res = await runCli(['applications', 'approve', receipt.id, '--json'], { control });
    t.equal(res.code, 0, res.stderr);
    const answer = res.json();
    t.match(answer.delivery, { notifier: 'webhook', status: 'delivered', attempts: 1, error: null, next_step: null });
    t.notOk(propertyNames(answer).has('key'), 'the operator is not shown the key');
    t.notOk(propertyNames(answer).has('message'));

    t.equal(receiver.received.length, 1, 'one POST');
    const got = receiver.received[0]!;
    t.ok(got.signatureValid, 'the signature verifies with the shared secret over "<timestamp>.<raw body>"');
    t.match(got.headers['x-svc-signature'], /^sha256=[0-9a-f]{64}$/);
    t.match(got.headers['x-svc-timestamp'], /^\d{10}$/);
    t.match(got.headers['x-svc-delivery'], /^dlv_/);
    t.equal(got.headers['content-type'], 'application/json');
    t.match(got.body, {
      type: 'svc.application.approved',
      application_id: receipt.id,
      contact_name: 'Ada Lovelace',
      messaging_handle: 'telegram @ada',
      key_id: answer.key_id,
      endpoints: ['alpha'],
      market_url: 'https://market.example',
    });
    t.match(got.body.instructions, /POST https:\/\/market\.example\/v1\/alpha\/<upstream-path>/);
    const key: string = got.body.key;
    t.ok(isWellFormedKey(key), 'the message carries the key');
    t.notOk(got.body.instructions.includes(key), 'the instructions do not repeat it');
    t.same(
      (await control.handle.ctx.store.keys.liveSecrets(answer.key_id, Date.now())).map((s) => s.hash),
      [hashKey(key)],
      'the delivered key is the application’s key',
    );

    // A forged signature is what the receiver check rejects (the check can fail).
    const forged = createHmac('sha256', 'another-secret-000000')
      .update(`${String(got.headers['x-svc-timestamp'])}.${got.raw}`)
      .digest('hex');
    t.not(`sha256=${forged}`, got.headers['x-svc-signature']);

    const show = await runCli(['applications', 'show', receipt.id, '--json'], { control });
    const detail = show.json();
    t.match(detail, { status: 'approved', delivery: { status: 'delivered', notifier: 'webhook', error: null } });
    t.same(
      detail.deliveries.map((d: any) => [d.attempt, d.outcome, d.http_status, d.target]),
      [[1, 'delivered', 204, `${new URL(receiver.url).origin}/hooks/svc`]],
      'the log names the target without its query string',
    );

    const human = await runCli(['applications', 'approve', (await submitJson(control.urls.api, merchantAnswers())).body.id], { control });
    t.equal(human.code, 0);
    t.match(human.stdout, /Delivered over the webhook for Grace Hopper at grace@weather\.example \(1 attempt\)/);
    t.equal(human.stdout.match(/svc_beta_[1-9A-HJ-NP-Za-km-z]{20,}/), null, 'no key in the operator’s output');

    await control.close();
    const needles = receiver.received.map((r) => r.body.key as string);
    t.equal(needles.length, 2);
    for (const file of filesUnder(control.dataDir)) {
      const bytes = readFileSync(file);
      for (const k of needles)
        t.notOk(bytes.includes(Buffer.from(k)), `${file.slice(control.dataDir.length)} does not hold a delivered key`);
    }
    if (control.config.databaseUrl !== null) {
      const rows = await databaseRows(control.config.databaseUrl);
      t.ok(rows.includes(receipt.id), 'the database rows are read');
      for (const k of needles) t.notOk(rows.includes(k), 'the PostgreSQL database does not hold a delivered key');
    }
    for (const k of needles) t.notOk(logs.text().includes(k), 'control’s logs do not hold it');
    t.ok(
      logs.records().some((r) => r.msg === 'application key delivered' && r.notifier === 'webhook'),
      'the delivery is logged',
    );
  });

  t.test('retries a 5xx with backoff, then delivers; a 4xx is final', async (t) => {
    const receiver = await startReceiver(t, [503, 500, 200, 400]);
    const control = await startTestControl(t, { store: kind, flags: webhookFlags(receiver.url) });
    const first = (await submitJson(control.urls.api, agentAnswers())).body.id;
    const res = await runCli(['applications', 'approve', first, '--json'], { control });
    t.equal(res.code, 0, res.stderr);
    t.match(res.json().delivery, { status: 'delivered', attempts: 3 });
    t.equal(receiver.received.length, 3);
    t.ok(
      receiver.received.every((r) => r.signatureValid),
      'every attempt is signed',
    );
    t.equal(new Set(receiver.received.map((r) => r.headers['x-svc-delivery'])).size, 1, 'one delivery id across retries');
    const log = (await runCli(['applications', 'show', first, '--json'], { control })).json().deliveries;
    t.same(
      log.map((d: any) => [d.attempt, d.outcome, d.http_status]),
      [
        [1, 'retrying', 503],
        [2, 'retrying', 500],
        [3, 'delivered', 200],
      ],
    );

    const second = (await submitJson(control.urls.api, merchantAnswers())).body.id;
    const refused = await runCli(['applications', 'approve', second, '--json'], { control });
    t.equal(refused.code, 1, 'a failed delivery exits 1');
    t.match(refused.json().delivery, { status: 'failed', attempts: 1, error: 'receiver answered 400; not retried' });
    t.equal(receiver.received.length, 4, 'a 400 is not retried');
    const shown = (await runCli(['applications', 'show', second, '--json'], { control })).json();
    t.equal(shown.deliveries[0].error, 'receiver answered 400', 'the receiver’s echo of the body is not kept');
    t.notOk(JSON.stringify(shown).includes(receiver.received[3]!.body.key), 'the key is not in show');
  });

  t.test('a receiver that is down: retries, then a clear failure; the application stays approved', async (t) => {
    const logs = captureLogs();
    const control = await startTestControl(t, { store: kind, flags: webhookFlags(await closedPortUrl()), log: logs.log });
    const id = (await submitJson(control.urls.api, agentAnswers())).body.id;

    const res = await runCli(['applications', 'approve', id, '--json'], { control });
    t.equal(res.code, 1, 'exit 1: approved but not delivered');
    const answer = res.json();
    t.match(answer.delivery, {
      notifier: 'webhook',
      status: 'failed',
      attempts: 3,
      error: 'connection failed (ECONNREFUSED); gave up after 3 attempts',
    });
    t.match(answer.delivery.next_step, new RegExp(`svcctl applications redeliver ${id}`));
    t.match(answer.delivery.next_step, new RegExp(`svcctl keys revoke ${answer.key_id}`));
    t.equal(answer.application.status, 'approved', 'the application stays approved');
    t.match(res.stderr, /approved but its key was not delivered/);

    const human = await runCli(['applications', 'show', id], { control });
    t.match(human.stdout, /delivery:\s+FAILED over webhook .*connection failed \(ECONNREFUSED\); gave up after 3 attempts/);
    t.match(human.stdout, /the key is active but undelivered/);
    t.match(human.stdout, /attempt 1\s+retrying\s+connection failed \(ECONNREFUSED\)/);
    t.match(human.stdout, /attempt 3\s+failed/);
    const detail = (await runCli(['applications', 'show', id, '--json'], { control })).json();
    t.same(
      detail.deliveries.map((d: any) => d.outcome),
      ['retrying', 'retrying', 'failed'],
    );
    t.match(detail, { status: 'approved', key: { id: answer.key_id, status: 'active' }, delivery: { status: 'failed' } });
    t.ok(
      logs.records().some((r) => r.msg === 'application key delivery failed' && r.level === 'warn' && r.application_id === id),
      'a warning is logged',
    );

    const revoke = await runCli(['keys', 'revoke', answer.key_id, '--json'], { control });
    t.equal(revoke.code, 0, 'the key is revocable');
    t.equal(revoke.json().status, 'revoked');

    // Another approval, then a redelivery to the operator: a working key after all.
    const other = (await submitJson(control.urls.api, merchantAnswers())).body.id;
    const failed = (await runCli(['applications', 'approve', other, '--json'], { control })).json();
    const redelivered = await runCli(['applications', 'redeliver', other, '--to-operator', '--json'], { control });
    t.equal(redelivered.code, 0, redelivered.stderr);
    const body = redelivered.json();
    t.equal(body.key_id, failed.key_id);
    t.match(body.delivery, { notifier: 'operator', status: 'shown_to_operator' });
    t.same(
      (await control.handle.ctx.store.keys.liveSecrets(body.key_id, Date.now())).map((s) => s.hash),
      [hashKey(body.key)],
    );
    const log = (await runCli(['applications', 'show', other, '--json'], { control })).json();
    t.same(
      log.deliveries.map((d: any) => `${d.notifier}:${d.outcome}`),
      ['webhook:retrying', 'webhook:retrying', 'webhook:failed', 'operator:shown_to_operator'],
    );
    t.equal(log.delivery.status, 'shown_to_operator', 'show reports the latest delivery');
  });
});

t.test('settings: webhook needs a URL and a secret; the secret is never echoed', async (t) => {
  t.throws(() => loadConfig({ env: { SVC_APPLICATIONS_NOTIFIER: 'webhook' } }), ConfigError);
  try {
    loadConfig({ env: { SVC_APPLICATIONS_NOTIFIER: 'webhook', SVC_APPLICATIONS_WEBHOOK_URL: 'http://127.0.0.1:1/x' } });
    t.fail('a webhook without a secret must not load');
  } catch (err) {
    t.match((err as Error).message, /applications\.webhookSecret/);
  }
  try {
    loadConfig({ env: { SVC_APPLICATIONS_WEBHOOK_SECRET: 'short secret with spaces' } });
    t.fail('a bad secret must not load');
  } catch (err) {
    t.match((err as Error).message, /applications\.webhookSecret .*\(hidden\)/);
    t.notMatch((err as Error).message, /short secret/);
  }
  const ok = loadConfig({
    env: {
      SVC_APPLICATIONS_NOTIFIER: 'webhook',
      SVC_APPLICATIONS_WEBHOOK_URL: 'https://hooks.example/svc',
      SVC_APPLICATIONS_WEBHOOK_SECRET: SECRET,
    },
  });
  t.equal(ok.applications.notifier, 'webhook');
  t.equal(loadConfig({}).applications.notifier, 'operator', 'operator is the default');
});
