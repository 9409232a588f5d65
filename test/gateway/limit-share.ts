/**
 * The gateway's share of key limits (gateway/state/share.ts): 1 until control sends one; a
 * share line is taken and persisted, so a gateway restarted while control is away enforces the
 * same share (fail static); a line that does not parse changes nothing; the file is 0600.
 */
import t from 'tap';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LimitShare, SHARE_FILE } from '../../gateway/state/share';

const AT = Date.UTC(2030, 0, 1, 12, 0, 0);

t.test('the whole limit before any share arrived', async (t) => {
  const share = new LimitShare(t.testdir());
  t.equal(share.value, 1);
  t.equal(share.state, null);
});

t.test('a share line applies at once and survives a restart', async (t) => {
  const dir = t.testdir();
  const share = new LimitShare(dir);
  t.equal(share.apply({ type: 'share', share: 0.25, gateways: 4, mode: 'split' }, AT), true);
  t.equal(share.value, 0.25);
  t.same(share.state, { share: 0.25, gateways: 4, mode: 'split', received_at: new Date(AT).toISOString() });
  t.equal(statSync(join(dir, SHARE_FILE)).mode & 0o777, 0o600, 'share.json is 0600');

  const restarted = new LimitShare(dir);
  t.equal(restarted.value, 0.25, 'a restart without control keeps the last share');
  t.equal(restarted.state?.gateways, 4);
});

t.test('lines that do not parse change nothing', async (t) => {
  const dir = t.testdir();
  const share = new LimitShare(dir);
  share.apply({ type: 'share', share: 0.5, gateways: 2, mode: 'split' }, AT);
  for (const bad of [
    null,
    'x',
    { type: 'share', share: 0, gateways: 2, mode: 'split' },
    { type: 'share', share: 1.5, gateways: 1, mode: 'split' },
    { type: 'share', share: 0.5, gateways: 2, mode: 'global' },
    { type: 'share', share: 0.5, gateways: 2, mode: 'split', extra: 1 },
  ]) {
    t.equal(share.apply(bad, AT), false, `refused: ${JSON.stringify(bad)}`);
  }
  t.equal(share.value, 0.5);
  t.equal(new LimitShare(dir).value, 0.5, 'and nothing was persisted');
});

t.test('an unreadable or foreign share.json is ignored: the whole limit until control speaks', async (t) => {
  const dir = t.testdir();
  writeFileSync(join(dir, SHARE_FILE), '{"share": 7}');
  t.equal(new LimitShare(dir).value, 1);
  writeFileSync(join(dir, SHARE_FILE), 'not json');
  t.equal(new LimitShare(dir).value, 1);
});
