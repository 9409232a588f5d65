// A whole gateway (`startGateway`) on a stand-in control speaking the sync protocol: it names a
// fresh instance on the stream's query, applies keys' accounts and prepaid endpoints from the
// snapshot, refuses an unfunded account with 402, asks again at once when a delta names the
// account in `accounts_funded`, ships the admitted call's record with `reserved` and `instance`,
// and reports its journal `drained` once.
import t from 'tap';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../config/load';
import { startGateway } from '../../gateway/main';
import { SYNC_BUDGETS_PATH } from '../../protocol/budgets';
import { generateKey, hashKey } from '../../protocol/keys';
import { OutcomeBatch, type OutcomeRecord } from '../../protocol/outcome';
import { SYNC_OUTCOMES_PATH, SYNC_STREAM_PATH, SnapshotDigest, sealDelta } from '../../protocol/snapshot';
import { silentLogger } from '../../runtime/log';
import { testdirAfterTeardowns } from '../fixtures/stack';
import { SYNC_TOKEN, budgetControl } from './fixtures/budget-control';
import { ENGINES, listen, request, waitFor } from './fixtures/harness.cts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The full snapshot's lines: one prepaid endpoint with a premium of 500, one key on `acc_x`. */
function snapshotLines(upstreamPort: number, keyHash: string): string[] {
  const begin = JSON.stringify({
    type: 'snapshot_begin',
    version: 1,
    epoch: 1,
    generated_at: new Date().toISOString(),
    flags: { beta_gate_enabled: false, maintenance_mode: false },
    limits: { key: { count: 1000, window_seconds: 1, burst: 1000 }, ip: { count: 1000, window_seconds: 1, burst: 1000 } },
    endpoints: [
      {
        id: 'paid',
        upstream: `http://127.0.0.1:${upstreamPort}/`,
        methods: ['POST'],
        timeout_ms: 5000,
        sla_ms: 5000,
        price: 1000,
        premium: 500,
        headers: {},
        billing: 'prepaid',
      },
    ],
    key_count: 1,
  });
  const keys = JSON.stringify({
    type: 'keys',
    keys: [
      {
        id: 'key_x',
        secrets: [{ hash: keyHash, expires_at: null }],
        expires_at: null,
        endpoints: [],
        limit: null,
        lift: null,
        account: 'acc_x',
      },
    ],
  });
  const digest = new SnapshotDigest();
  digest.update(begin);
  digest.update(keys);
  return [begin, keys, JSON.stringify({ type: 'snapshot_end', version: 1, sha256: digest.digest() })];
}

for (const engine of ENGINES)
  t.test(`a gateway holds budgets per instance and reacts to accounts_funded [${engine}]`, async (t) => {
    const upstreamPort = await listen(
      t,
      http.createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
      }),
    );
    const key = generateKey();
    const { control: bank, handle: budgets } = budgetControl({ funds: { acc_x: 0 }, step: 1_000 });
    const queries: URLSearchParams[] = [];
    const shipped: OutcomeRecord[] = [];
    let stream: http.ServerResponse | null = null;
    const control = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://control');
      if (url.pathname === SYNC_STREAM_PATH) {
        queries.push(url.searchParams);
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        res.write(snapshotLines(upstreamPort, hashKey(key)).join('\n') + '\n');
        stream = res;
        return;
      }
      if (url.pathname === SYNC_BUDGETS_PATH) return budgets(req, res);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (url.pathname === SYNC_OUTCOMES_PATH) {
          const batch = OutcomeBatch.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          shipped.push(...batch.records);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: batch.records.length, duplicates: 0 }));
        } else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    const controlUrl = `http://127.0.0.1:${await listen(t, control)}`;

    const dataDir = testdirAfterTeardowns(t);
    writeFileSync(join(dataDir, 'sync.token'), SYNC_TOKEN);
    const gw = await startGateway(
      loadConfig({
        env: {
          SVC_DATA_DIR: dataDir,
          SVC_GATEWAY_ID: 'gw-prepaid',
          SVC_HOST: '127.0.0.1',
          SVC_GATEWAY_PORT: '0',
          SVC_GATEWAY_ENGINE: engine,
          SVC_CONTROL_URL: controlUrl,
        },
      }),
      { log: silentLogger },
    );
    t.teardown(() => gw.close());
    const port = Number(new URL(gw.url).port);
    const call = () => request(port, { method: 'POST', path: '/v1/paid/x', headers: { authorization: `Bearer ${key}` }, body: '{}' });

    await waitFor(() => gw.state() !== null, 'the snapshot');
    t.match(gw.instance, UUID, 'a random instance id');
    t.equal(queries[0]!.get('instance'), gw.instance, 'announced on the stream');
    t.equal(queries[0]!.get('gateway_id'), 'gw-prepaid');

    const refused = await call();
    t.equal(refused.status, 402, 'the account has no money');
    t.match(JSON.parse(refused.body), { code: 'svc_payment_required', required: 500, available: 0, account_id: 'acc_x' });
    const wants = () => bank.requests.filter((r) => r.want.some((w) => w.need > 0));
    t.equal(wants().length, 1);
    t.equal((await call()).status, 402, 'still short');
    t.equal(wants().length, 1, 'and not asked again so soon');

    // A deposit: control has money for the account and says so in a delta.
    bank.funds.set('acc_x', 1_000);
    stream!.write(sealDelta({ type: 'delta', version: 2, base: 1, accounts_funded: ['acc_x'] }).line + '\n');
    await waitFor(() => gw.state()?.version === 2, 'the delta applied');
    t.equal((await call()).status, 200, 'funded: asked at once, admitted');
    t.equal(wants().length, 2);
    t.same(
      wants()[1],
      { instance: gw.instance, gateway_id: 'gw-prepaid', want: [{ account: 'acc_x', need: 500 }], held: [] },
      'the second want',
    );

    const record = await waitFor(() => shipped.find((r) => r.status === 200), 'the record shipped');
    t.match(record, { key_id: 'key_x', endpoint_id: 'paid', reserved: 500, instance: gw.instance });
    await waitFor(() => bank.requests.some((r) => r.drained === true), 'drained reported');
    await waitFor(() => bank.requests.some((r) => r.held.length > 0 && r.drained !== true), 'a later poll');
    t.equal(bank.requests.filter((r) => r.drained === true).length, 1, 'drained sent once');
    t.same(gw.budgets(), { instance: gw.instance, accounts: 1, available: 500, drained: true });
    t.equal(bank.invalid, 0, 'every budget request parsed');
  });

t.test('a control that does not take an instance on the stream is dialled again without it', async (t) => {
  const key = generateKey();
  const queries: URLSearchParams[] = [];
  let streams = 0;
  const control = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    if (url.pathname !== SYNC_STREAM_PATH) return void req.resume().on('end', () => res.writeHead(404).end());
    queries.push(url.searchParams);
    if (url.searchParams.has('instance')) {
      // What a control older than prepaid billing answers (its router refuses unknown parameters).
      const problem = { status: 400, code: 'svc_bad_request', errors: [{ field: 'instance', message: 'is not a known parameter' }] };
      res.writeHead(400, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
      return;
    }
    streams++;
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(snapshotLines(9, hashKey(key)).join('\n') + '\n');
    // The first stream ends at once: the next dial names the instance again.
    if (streams === 1) res.end();
  });
  const controlUrl = `http://127.0.0.1:${await listen(t, control)}`;
  const dataDir = testdirAfterTeardowns(t);
  writeFileSync(join(dataDir, 'sync.token'), SYNC_TOKEN);
  const gw = await startGateway(
    loadConfig({
      env: {
        SVC_DATA_DIR: dataDir,
        SVC_GATEWAY_ID: 'gw-old-control',
        SVC_HOST: '127.0.0.1',
        SVC_GATEWAY_PORT: '0',
        SVC_CONTROL_URL: controlUrl,
      },
    }),
    { log: silentLogger },
  );
  t.teardown(() => gw.close());
  await waitFor(() => streams === 2, 'two streams without the instance');
  t.ok(gw.state() !== null, 'the snapshot was applied');
  t.same(
    queries.map((q) => q.get('instance')),
    [gw.instance, null, gw.instance, null],
    'named, refused, dialled without; after the stream ended, named again',
  );
});
