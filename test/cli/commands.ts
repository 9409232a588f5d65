/**
 * svcctl commands in-process (`main()` with an injected admin client and memory output)
 * against an in-process control: JSON output, exit codes 0/1/2, one-line errors on stderr.
 */
import t from 'tap';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { StatusView } from '../../protocol/admin';
import { keyStub } from '../../protocol/keys';
import { runCli } from '../fixtures/cli';
import { propertyNames, startTestControl } from '../fixtures/control';
import { closedPort } from '../fixtures/upstream';

t.test('keys', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });

  const issued = await cli('keys', 'issue', '--name', 'demo', '--json');
  t.equal(issued.code, 0, issued.stderr);
  t.equal(issued.stderr, '');
  const body = issued.json();
  t.match(body.id, /^key_/);
  t.match(body.key, /^svc_beta_[1-9A-HJ-NP-Za-km-z]{32,}$/);
  t.equal(body.prefix, keyStub(body.key));
  t.equal(body.name, 'demo');

  const list = await cli('keys', 'list', '--json');
  t.equal(list.code, 0);
  const listed = list.json();
  t.same(
    listed.keys.map((k: { id: string }) => k.id),
    [body.id],
    'the issued key is listed',
  );
  t.notOk(propertyNames(listed).has('key'), 'no key field');
  t.notOk(list.stdout.includes(body.key), 'no plaintext');

  const human = await cli('keys', 'list');
  t.equal(human.code, 0);
  t.match(human.stdout, body.id, 'the table shows the id');
  t.match(human.stdout, `${body.prefix}…`, 'and the display stub');
  t.notOk(human.stdout.includes(body.key), 'but not the plaintext');

  const show = await cli('keys', 'show', body.id, '--json');
  t.equal(show.code, 0);
  t.equal(show.json().id, body.id);
  t.notOk(show.stdout.includes(body.key));

  const expiring = await cli('keys', 'issue', '--expires', '30d', '--limit', '600/min', '--json');
  t.equal(expiring.code, 0, expiring.stderr);
  t.same(expiring.json().limit, { count: 600, window_seconds: 60 }, '--limit is parsed');
  t.ok(expiring.json().expires_at, '--expires sets an expiry');

  const lift = await cli('keys', 'lift', body.id, '--limit', '600/min', '--for', '2h', '--json');
  t.equal(lift.code, 0, lift.stderr);
  t.same({ count: lift.json().lift.count, window_seconds: lift.json().lift.window_seconds }, { count: 600, window_seconds: 60 });

  const rotated = await cli('keys', 'rotate', body.id, '--grace', '1h', '--json');
  t.equal(rotated.code, 0, rotated.stderr);
  t.not(rotated.json().key, body.key, 'rotate prints the new key');
  t.equal(rotated.json().secrets.length, 2);

  const wallet = await cli('keys', 'wallet', body.id, 'So11111111111111111111111111111111111111112', '--json');
  t.equal(wallet.code, 0, wallet.stderr);
  t.equal(wallet.json().wallet, 'So11111111111111111111111111111111111111112');
  const badWallet = await cli('keys', 'wallet', body.id, '0x123');
  t.equal(badWallet.code, 2, 'a bad wallet is a usage error');
  t.match(badWallet.stderr, /Solana/);

  const revoked = await cli('keys', 'revoke', body.id, '--json');
  t.equal(revoked.code, 0);
  t.equal(revoked.json().status, 'revoked');
  t.equal(revoked.json().changed, true);
});

t.test('flags and changelog', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });

  const set = await cli('flag', 'set', 'beta_gate_enabled', 'on', '--note', 'x', '--json');
  t.equal(set.code, 0, set.stderr);
  t.equal(set.json().value, true);
  t.equal(set.json().changed, true);

  const spec = await cli('flag', 'set', 'system_flags.beta_gate_enabled', 'on', '--json');
  t.equal(spec.code, 0, 'the system_flags. form is accepted');
  t.equal(spec.json().changed, false, 'and already on');

  const log = await cli('changelog', 'list', '--json');
  t.equal(log.code, 0);
  const entries = log.json().entries;
  t.equal(entries.length, 1);
  t.equal(entries[0].kind, 'flag');
  t.equal(entries[0].flag, 'beta_gate_enabled');
  t.match(entries[0].text, /: x$/, 'carries the note');

  const notice = await cli('changelog', 'add', 'maintenance tonight', '--json');
  t.equal(notice.code, 0);
  const log2 = await cli('changelog', 'list', '--json');
  t.same(
    log2.json().entries.map((e: { kind: string }) => e.kind),
    ['notice', 'flag'],
    'newest first',
  );

  const get = await cli('flag', 'get', 'beta_gate_enabled', '--json');
  t.equal(get.json().value, true);
  const list = await cli('flag', 'list', '--json');
  t.same(
    list
      .json()
      .flags.map((f: { name: string }) => f.name)
      .sort(),
    ['beta_gate_enabled', 'maintenance_mode'],
  );

  const bogus = await cli('flag', 'set', 'bogus', 'on');
  t.equal(bogus.code, 2, 'unknown flag: exit 2');
  t.match(bogus.stderr, 'beta_gate_enabled', 'stderr lists the known flags');
  t.match(bogus.stderr, 'maintenance_mode');
  t.equal(bogus.stdout, '', 'nothing on stdout');

  const badValue = await cli('flag', 'set', 'beta_gate_enabled', 'maybe');
  t.equal(badValue.code, 2, 'a value other than on/off: exit 2');
  const unchanged = await cli('flag', 'get', 'beta_gate_enabled', '--json');
  t.equal(unchanged.json().value, true, 'and nothing changed');

  const badLimit = await cli('changelog', 'list', '--limit', '0');
  t.equal(badLimit.code, 2);
});

t.test('usage errors exit 2 before or at the API', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });
  const issued = (await cli('keys', 'issue', '--json')).json();

  const parsec = await cli('keys', 'lift', issued.id, '--limit', '10/parsec', '--for', '2h');
  t.equal(parsec.code, 2, 'bad --limit: exit 2');
  t.match(parsec.stderr, '10/parsec');
  const forever = await cli('keys', 'lift', issued.id, '--limit', '10/min', '--for', 'forever');
  t.equal(forever.code, 2, 'bad --for: exit 2');
  const noFor = await cli('keys', 'lift', issued.id, '--limit', '10/min');
  t.equal(noFor.code, 2, 'missing required option: exit 2');
  const shown = (await cli('keys', 'show', issued.id, '--json')).json();
  t.equal(shown.lift, null, 'no refused lift took effect');

  const ftp = await cli('endpoints', 'add', 'x', '--upstream', 'ftp://a');
  t.equal(ftp.code, 2, 'an upstream the API refuses: exit 2');
  t.match(ftp.stderr, 'upstream');
  t.match(ftp.stderr, 'svc_bad_request');
  const dotted = await cli('endpoints', 'add', 'x', '--upstream', 'http://127.0.0.1:9/a/../../etc');
  t.equal(dotted.code, 2, 'an upstream with dot segments: exit 2');
  t.match(dotted.stderr, /upstream.*dot segments/);
  const noUpstream = await cli('endpoints', 'add', 'x');
  t.equal(noUpstream.code, 2, 'missing --upstream: exit 2');
  const badPrice = await cli('endpoints', 'add', 'x', '--upstream', 'http://127.0.0.1:9', '--price', '1.5');
  t.equal(badPrice.code, 2, 'a fractional price: exit 2');
  const badHeader = await cli('endpoints', 'add', 'x', '--upstream', 'http://127.0.0.1:9', '--header', 'novalue');
  t.equal(badHeader.code, 2, 'a header without a colon: exit 2');
  const endpoints = (await cli('endpoints', 'list', '--json')).json();
  t.same(endpoints.endpoints, [], 'nothing was added');

  const badExpires = await cli('keys', 'issue', '--expires', 'soon');
  t.equal(badExpires.code, 2);
  const badStatus = await cli('keys', 'list', '--status', 'sleepy');
  t.equal(badStatus.code, 2);
});

t.test('endpoints', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });
  const added = await cli(
    'endpoints',
    'add',
    'echo',
    '--upstream',
    'http://127.0.0.1:9/api',
    '--methods',
    'get,put',
    '--price',
    '100',
    '--header',
    'X-Api-Key: secret-value-xyz',
    '--json',
  );
  t.equal(added.code, 0, added.stderr);
  t.same([...added.json().methods].sort(), ['GET', 'POST', 'PUT']);
  t.same(added.json().injected_headers, ['X-Api-Key']);
  t.notOk(added.stdout.includes('secret-value-xyz'), 'the header value is not printed');
  const shown = await cli('endpoints', 'show', 'echo');
  t.equal(shown.code, 0);
  t.match(shown.stdout, 'X-Api-Key');
  t.notOk(shown.stdout.includes('secret-value-xyz'));
  t.match(shown.stdout, /^billing: +postpaid$/m, 'postpaid by default');
  const updated = await cli('endpoints', 'update', 'echo', '--price', '200', '--billing', 'prepaid', '--json');
  t.equal(updated.json().price, 200);
  t.equal(updated.json().billing, 'prepaid');
  t.match(shown.stdout, /^refund_cap_per_call: +none$/m, 'no per-call cap by default');
  t.match(shown.stdout, /^refund_cap_per_batch: +none$/m, 'no per-batch cap by default');
  const caps = await cli('endpoints', 'update', 'echo', '--refund-cap-per-call', '1.25', '--refund-cap-per-batch', '40000000', '--json');
  t.equal(caps.code, 0, caps.stderr);
  t.match(caps.json(), { refund_cap_per_call: 1_250_000, refund_cap_per_batch: 40_000_000 }, 'units with a decimal point, or micro-units');
  t.match((await cli('endpoints', 'show', 'echo')).stdout, /^refund_cap_per_call: +1250000$/m);
  for (const [flag, value, message] of [
    ['--refund-cap-per-call', '-5', /--refund-cap-per-call must be micro-units/],
    ['--refund-cap-per-call', '0.0000001', /--refund-cap-per-call has more than 6 decimals/],
    ['--refund-cap-per-batch', 'lots', /--refund-cap-per-batch must be micro-units/],
    ['--refund-cap-per-batch', '1e6', /--refund-cap-per-batch must be micro-units/],
    ['--refund-cap-per-batch', '99999999999999999999', /--refund-cap-per-batch is too large/],
  ] as const) {
    const bad = await cli('endpoints', 'update', 'echo', flag, value);
    t.equal(bad.code, 2, `${flag} ${value}: exit 2`);
    t.match(bad.stderr, message);
  }
  const none = await cli('endpoints', 'update', 'echo', '--refund-cap-per-call', '0', '--refund-cap-per-batch', '0.0', '--json');
  t.match(none.json(), { refund_cap_per_call: 0, refund_cap_per_batch: 0 }, '0 (or 0.0) removes a cap');
  const badBilling = await cli('endpoints', 'update', 'echo', '--billing', 'later');
  t.equal(badBilling.code, 2, 'an unknown billing: exit 2');
  t.match(badBilling.stderr, '--billing must be prepaid or postpaid');
  const empty = await cli('endpoints', 'update', 'echo');
  t.equal(empty.code, 2, 'update with nothing to change: exit 2');
  const removed = await cli('endpoints', 'remove', 'echo', '--json');
  t.equal(removed.code, 0);
  t.equal(removed.json().removed, true);
  const gone = await cli('endpoints', 'show', 'echo');
  t.equal(gone.code, 1, 'show after remove: exit 1');
});

t.test('failures exit 1 with one line on stderr', async (t) => {
  const control = await startTestControl(t);
  const missing = await runCli(['keys', 'show', 'nope'], { control });
  t.equal(missing.code, 1, 'not found: exit 1');
  t.equal(missing.stdout, '');
  t.equal(missing.stderr.split('\n').length, 1, 'one line');
  t.match(missing.stderr, /^svcctl: /);
  t.match(missing.stderr, 'svc_not_found');

  const dup1 = await runCli(['endpoints', 'add', 'dup', '--upstream', 'http://127.0.0.1:9'], { control });
  t.equal(dup1.code, 0);
  const dup2 = await runCli(['endpoints', 'add', 'dup', '--upstream', 'http://127.0.0.1:9'], { control });
  t.equal(dup2.code, 1, 'conflict: exit 1');
  t.match(dup2.stderr, 'svc_conflict');

  const wrongToken = await runCli(['status'], { control, token: 'svc_admin_' + 'x'.repeat(40) });
  t.equal(wrongToken.code, 1, 'wrong token: exit 1');
  t.match(wrongToken.stderr, 'svc_unauthorized');
  const noToken = await runCli(['status'], { control, token: null });
  t.equal(noToken.code, 1, 'no token: exit 1');
  t.match(noToken.stderr, 'SVC_ADMIN_TOKEN', 'says where a token comes from');

  const port = await closedPort();
  const down = await runCli(['keys', 'list'], { control: `http://127.0.0.1:${port}`, token: control.adminToken });
  t.equal(down.code, 1, 'control down: exit 1');
  t.match(down.stderr, `control not reachable at http://127.0.0.1:${port}`);
  t.match(down.stderr, 'svcctl up');
  t.equal(down.stderr.split('\n').length, 1, 'one line');
});

t.test('status on a PostgreSQL store shows its URL with the password masked', async (t) => {
  // Control runs on SQLite only so far; the postgres variant is the documented contract, so
  // the view comes from a stand-in for control, checked against the schema.
  const control = await startTestControl(t);
  const real = StatusView.parse((await control.admin('GET', '/_admin/v1/status')).body);
  let view: StatusView = real;
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(view));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const status = () => runCli(['status'], { control: url, token: control.adminToken });

  view = StatusView.parse({
    ...real,
    store: { kind: 'postgres', url: 'postgres://svc:***@db.internal:5432/svc', schema_version: 3, schema_expected: 4 },
  });
  const text = await status();
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, 'store          postgres postgres://svc:***@db.internal:5432/svc (schema v3 of 4)');
  const json = await runCli(['status', '--json'], { control: url, token: control.adminToken });
  t.same(json.json().store, view.store, '--json passes the store through');

  view = {
    ...real,
    store: { kind: 'postgres', url: 'postgres://svc:hunter2@db.internal:5432/svc', schema_version: 4, schema_expected: 4 },
  };
  const leaked = await status();
  t.notMatch(leaked.stdout, 'hunter2', 'a password control failed to mask is masked by svcctl');
  t.match(leaked.stdout, 'store          postgres postgres://svc:***@db.internal:5432/svc (schema v4 of 4)');
});

t.test('status, help and unknown commands', async (t) => {
  const control = await startTestControl(t);
  const status = await runCli(['status', '--json'], { control });
  t.equal(status.code, 0);
  t.equal(status.json().status, 'ok');
  t.equal(status.json().urls.control, control.urls.control);
  const text = await runCli(['status'], { control });
  t.match(text.stdout, control.urls.api);
  const store = status.json().store;
  t.match(store, { kind: 'sqlite', path: join(control.dataDir, 'control.db'), journal_mode: 'wal', synchronous: 'full' });
  t.equal(store.schema_version, store.schema_expected, 'the schema is current');
  t.notOk('database' in status.json(), '--json passes the view through: store, no database');
  t.match(
    text.stdout,
    `store          sqlite ${join(control.dataDir, 'control.db')} (wal, synchronous=full, schema v${store.schema_version} of ${store.schema_expected})`,
    'the store line: kind, path, pragmas, schema version of expected',
  );
  t.match(status.json().bootstrap, {
    database_ready: true,
    pool_funded: false,
    pool_balance: 0,
    endpoints: 0,
    gateways_connected: 0,
    gateways_known: 0,
  });
  t.match(status.json().settler, { backlog: 0, last_batch: null });
  t.ok(['running', 'idle', 'paused', 'not_running'].includes(status.json().settler.state), 'the settler state is named');
  t.match(text.stdout, /bootstrap\s+pool not funded, 0 endpoint\(s\), 0 of 0 gateway\(s\) connected; next: fund the pool/);
  t.match(text.stdout, /settler\s+\w+, backlog 0, no batch yet/);
  t.equal((await runCli(['pool', 'fund', '2.5'], { control })).code, 0);
  const funded = await runCli(['status', '--json'], { control });
  t.match(funded.json().bootstrap, { pool_funded: true, pool_balance: 2_500_000 });
  t.match((await runCli(['status'], { control })).stdout, /bootstrap\s+pool funded \(2\.5\)/);

  const help = await runCli(['--help'], { control });
  t.equal(help.code, 0, '--help: exit 0');
  for (const noun of ['keys', 'flag', 'endpoints', 'changelog', 'status', 'serve', 'up']) t.match(help.stdout, noun, `help lists ${noun}`);
  const keysHelp = await runCli(['keys', 'issue', '--help'], { control });
  t.equal(keysHelp.code, 0, 'help on a leaf command');
  t.match(keysHelp.stdout, '--json');
  t.match(keysHelp.stdout, '--expires');

  const unknown = await runCli(['frobnicate'], { control });
  t.equal(unknown.code, 2, 'unknown command: exit 2');
  t.match(unknown.stderr, 'frobnicate');
  const unknownVerb = await runCli(['keys', 'explode'], { control });
  t.equal(unknownVerb.code, 2, 'unknown subcommand: exit 2');
  const unknownOption = await runCli(['keys', 'list', '--colour'], { control });
  t.equal(unknownOption.code, 2, 'unknown option: exit 2');
  const missingArg = await runCli(['keys', 'show'], { control });
  t.equal(missingArg.code, 2, 'missing argument: exit 2');
});
