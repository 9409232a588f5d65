// A gateway whose start fails half way (here its port is taken) gives back what it took: the
// data dir's single-instance lock above all, so the same gateway starts at once on another port
// in the same process, instead of "already running".
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadConfig } from '../../config/load';
import { startGateway } from '../../gateway/main';
import { silentLogger } from '../../runtime/log';
import { testdirAfterTeardowns } from '../fixtures/stack';

t.test('a taken port: the start fails, and the lock, journal and files are released', async (t) => {
  const dataDir = testdirAfterTeardowns(t);
  writeFileSync(join(dataDir, 'sync.token'), 'sync-token-for-the-test');
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as AddressInfo).port;
  const env = {
    SVC_DATA_DIR: dataDir,
    SVC_GATEWAY_ID: 'gw-start-failure',
    SVC_HOST: '127.0.0.1',
    // Nothing listens there; the sync stream only starts once the gateway listens.
    SVC_CONTROL_URL: 'http://127.0.0.1:9',
  };

  await t.rejects(
    startGateway(loadConfig({ env: { ...env, SVC_GATEWAY_PORT: String(port) } }), { log: silentLogger }),
    { code: 'EADDRINUSE' },
    'the port is taken',
  );
  const gateway = await startGateway(loadConfig({ env: { ...env, SVC_GATEWAY_PORT: '0' } }), { log: silentLogger });
  t.teardown(() => gateway.close());
  t.equal(gateway.id, 'gw-start-failure', 'the same gateway starts on a free port');
  t.match(gateway.url, /^http:\/\/127\.0\.0\.1:\d+$/);
});
