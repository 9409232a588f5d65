/**
 * The settler's leadership without a database: the claim's tick (the cadence, within its
 * bounds), the lease given up by a control that stops even when a claim in flight took it
 * after the stop began, a failed claim leaving the lease to lapse, and the one control of a
 * SQLite store always leading.
 */
import t from 'tap';
import { silentLogger } from '../../runtime/log';
import type { ClusterTable } from '../../control/store';
import { LEASE_TICK_MIN_MS, LeaseLeadership, leaseTickMs, soleLeadership } from '../../control/settler/leadership';

/** A cluster table whose lease claims answer when the test says so. */
function fakeCluster() {
  const released: string[] = [];
  const claims: ((held: boolean | Error) => void)[] = [];
  const cluster = {
    claimLease: () =>
      new Promise<boolean>((resolve, reject) => claims.push((held) => (held instanceof Error ? reject(held) : resolve(held)))),
    releaseLease: (id: string) => {
      released.push(id);
      return Promise.resolve();
    },
  } as unknown as ClusterTable;
  return { cluster, released, claims };
}

t.test('claims on the cadence, at most every third of the lease, at least every LEASE_TICK_MIN_MS', async (t) => {
  t.equal(leaseTickMs(5_000, 10_000), 3_333);
  t.equal(leaseTickMs(1_000, 10_000), 1_000);
  t.equal(leaseTickMs(10, 10_000), LEASE_TICK_MIN_MS);
});

t.test('a control that stops while a claim is in flight gives up the lease that claim took', async (t) => {
  const { cluster, released, claims } = fakeCluster();
  const lease = new LeaseLeadership({ cluster, id: 'ctl_x', leaseMs: 10_000, cadenceMs: 50, log: silentLogger });
  const started = lease.start();
  t.equal(claims.length, 1, 'the first claim is in flight');
  const stopping = lease.stop();
  claims[0]!(true);
  await started;
  await stopping;
  t.equal(lease.leading(), false, 'a stopped control does not lead');
  t.same(released, ['ctl_x'], 'and released the lease the claim took');
});

t.test('a claim that fails leaves the lease to lapse; a refused one ends the leadership', async (t) => {
  const { cluster, claims } = fakeCluster();
  const lease = new LeaseLeadership({ cluster, id: 'ctl_x', leaseMs: 10_000, cadenceMs: 3_600_000, log: silentLogger });
  const started = lease.start();
  claims[0]!(true);
  await started;
  t.equal(lease.leading(), true);
  const failing = (lease as unknown as { claim(): Promise<void> }).claim();
  claims[1]!(new Error('connection lost'));
  await failing;
  t.equal(lease.leading(), true, 'still leading until the lease it holds lapses');
  const refused = (lease as unknown as { claim(): Promise<void> }).claim();
  claims[2]!(false);
  await refused;
  t.equal(lease.leading(), false, 'another control holds it');
  await lease.stop();
});

t.test('onTaken is told each time the lease is taken, not on its renewals', async (t) => {
  const { cluster, claims } = fakeCluster();
  const lease = new LeaseLeadership({ cluster, id: 'ctl_x', leaseMs: 10_000, cadenceMs: 3_600_000, log: silentLogger });
  let taken = 0;
  lease.onTaken(() => taken++);
  const claim = async (held: boolean) => {
    const done = (lease as unknown as { claim(): Promise<void> }).claim();
    claims.at(-1)!(held);
    await done;
  };
  const started = lease.start();
  claims[0]!(false);
  await started;
  t.equal(taken, 0, 'not while another control holds it');
  await claim(true);
  t.equal(taken, 1, 'told when it takes the lease');
  await claim(true);
  t.equal(taken, 1, 'not when it renews it');
  await claim(false);
  await claim(true);
  t.equal(taken, 2, 'told again when it takes it back');
  await lease.stop();
});

t.test('the one control of a SQLite store always leads', async (t) => {
  const sole = soleLeadership(() => ({ id: 'ctl_one', url: 'http://127.0.0.1:1' }));
  await sole.start();
  t.equal(sole.leading(), true);
  t.same(await sole.leader(), { id: 'ctl_one', url: 'http://127.0.0.1:1' });
  await sole.stop();
});
