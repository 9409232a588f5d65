/**
 * `control.json` (protocol/runtime.ts): what a running control writes is a `RuntimeInfo`, and
 * `svcctl` and gateways read its control URL back; a torn or foreign file reads as nothing, so
 * they fall back to the configured port.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNTIME_FILE, RuntimeInfo, runtimeControlUrl } from '../../protocol/runtime';
import { startTestControl } from '../fixtures/control';

t.test('control writes a RuntimeInfo whose control URL reads back', async (t) => {
  const control = await startTestControl(t);
  const text = readFileSync(join(control.dataDir, RUNTIME_FILE), 'utf8');
  const parsed = RuntimeInfo.safeParse(JSON.parse(text));
  t.ok(parsed.success, `control.json is a RuntimeInfo${parsed.success ? '' : `: ${parsed.error.message}`}`);
  t.same(parsed.data?.urls, control.urls, 'with the URLs control listens on');
  t.equal(runtimeControlUrl(text), control.urls.control);
});

t.test('a torn, foreign or missing file reads as no URL', async (t) => {
  const good = JSON.stringify({
    pid: 42,
    urls: { control: 'http://127.0.0.1:1', api: 'http://127.0.0.1:2', indexer: 'http://127.0.0.1:3' },
    started_at: '2030-01-01T00:00:00.000Z',
  });
  t.equal(runtimeControlUrl(good), 'http://127.0.0.1:1');
  t.equal(runtimeControlUrl(null), null, 'missing');
  t.equal(runtimeControlUrl(good.slice(0, 40)), null, 'torn');
  t.equal(runtimeControlUrl('{"urls":{"control":""}}'), null, 'foreign');
  t.equal(runtimeControlUrl(JSON.stringify({ ...JSON.parse(good), urls: { control: 7 } })), null, 'wrong type');
});
