/**
 * Endpoint display names: set with `svcctl endpoints add|update --display-name`, removed with
 * `--no-display-name`, one line of plain text up to 80 characters, shown by the public reads
 * beside the opaque provider id. Only the public pages use it: renaming changes no state
 * version and gateways never receive it.
 */
import t from 'tap';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl } from '../fixtures/control';
import { get } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';
import { snapshotEndpoint } from '../../control/sync/snapshot';
import { OpaqueIds } from '../../protocol/opaque-ids';

forEachStore(t, (t, kind) => {
  t.test('set, shown, changed, removed; through the admin API and svcctl', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const cli = (...args: string[]) => runCli(args, { control });
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);

    const added = await cli(
      'endpoints',
      'add',
      'weather',
      '--upstream',
      'https://api.weather.example/v2',
      '--display-name',
      'Weather v2',
      '--json',
    );
    t.equal(added.code, 0, added.stderr);
    t.equal(added.json().display_name, 'Weather v2', 'add --display-name');
    const plain = await cli('endpoints', 'add', 'search', '--upstream', 'https://search.example/', '--json');
    t.equal(plain.json().display_name, null, 'none unless given');

    const providers = async () =>
      (clock.advance(60_000), await get(control, control.urls.api, '/api/v1/providers')).body.providers as {
        id: string;
        display_name: string | null;
      }[];
    const nameOf = async (endpoint: string) => (await providers()).find((p) => p.id === ids.provider(endpoint))?.display_name;
    t.equal(await nameOf('weather'), 'Weather v2', 'the public providers read carries it');
    t.equal(await nameOf('search'), null);

    const versionBefore = (await control.admin('GET', '/_admin/v1/status')).body.version;
    const renamed = await cli('endpoints', 'update', 'weather', '--display-name', '  Weather (EU)  ', '--json');
    t.equal(renamed.code, 0, renamed.stderr);
    t.equal(renamed.json().display_name, 'Weather (EU)', 'update --display-name, trimmed');
    t.equal(renamed.json().version, versionBefore, 'a rename alone changes no state version (gateways never see the name)');
    t.equal((await control.admin('GET', '/_admin/v1/status')).body.version, versionBefore);
    const priced = await control.admin('PATCH', '/_admin/v1/endpoints/weather', { display_name: 'Weather', price: 5 });
    t.equal(priced.body.version, versionBefore + 1, 'a rename with another change is a state change as before');

    const shown = await cli('endpoints', 'show', 'weather');
    t.match(shown.stdout, /^display name:\s+Weather$/m, 'endpoints show prints it');
    const row = (await control.handle.ctx.store.endpoints.byId('weather'))!;
    t.notOk('display_name' in snapshotEndpoint(row), 'the gateway snapshot has no display name');

    const removed = await cli('endpoints', 'update', 'weather', '--no-display-name', '--json');
    t.equal(removed.code, 0, removed.stderr);
    t.equal(removed.json().display_name, null, '--no-display-name removes it');
    t.equal(await nameOf('weather'), null);
    t.equal(
      (await control.admin('GET', '/_admin/v1/endpoints/weather')).body.upstream,
      'https://api.weather.example/v2',
      'nothing else changed',
    );

    for (const [value, what] of [
      ['', 'empty'],
      ['   ', 'blank'],
      ['x'.repeat(81), '81 characters'],
      ['Weather\nv2', 'a line break'],
      [7, 'not text'],
    ] as const) {
      const res = await control.admin('PATCH', '/_admin/v1/endpoints/weather', { display_name: value });
      t.equal(res.status, 400, `${what}: 400`);
      t.equal(res.body.errors?.[0]?.field, 'display_name', `${what}: names the field`);
    }
    t.equal(
      (await control.admin('PATCH', '/_admin/v1/endpoints/weather', { display_name: 'x'.repeat(80) })).status,
      200,
      '80 characters pass',
    );
    const bad = await cli('endpoints', 'update', 'weather', '--display-name', 'a\u001b[2Jb');
    t.equal(bad.code, 2, 'svcctl reports the refusal as a bad value');
    t.match(bad.stderr, /display_name.*control characters/);
  });
});
