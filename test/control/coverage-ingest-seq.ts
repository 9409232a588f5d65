/**
 * What control tells a gateway about the failures its coverage lines reflect (docs/money.md,
 * "Pause"; control/ingest-seq.ts): each outcome batch's answer numbers its commit
 * (`ingest_seq`, counted by this control process, `ingest_instance`), and each `coverage` line
 * comes right after an `ingested` line with the count its evaluation took before it read the
 * pool. A batch committed while an evaluation reads is not claimed by it. Then on both stores,
 * through the routes, to a hand-written gateway.
 */
import t from 'tap';
import type { Connection } from '../../control/sync/connection';
import { IngestCounter } from '../../control/ingest-seq';
import { writeCoverageLine } from '../../control/sync/side-lines';
import { InstanceId } from '../../protocol/budgets';
import { OutcomeAck } from '../../protocol/outcome';
import { startTestControl } from '../fixtures/control';
import { keepRenewing, liveGateway } from '../fixtures/fake-gateway';
import { addEndpoint, ingest } from '../fixtures/public';
import { outcome } from '../fixtures/settlement';
import { waitFor } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';

const CALL = 1_100;

t.test('the count: 0 until a commit, then 1, 2, …; each process its own instance', async (t) => {
  const counter = new IngestCounter();
  t.ok(InstanceId.safeParse(counter.instance).success, 'the instance is an instance id');
  t.same(counter.mark(), { instance: counter.instance, seq: 0 }, 'nothing committed yet');
  t.equal(counter.committed(), 1);
  t.equal(counter.committed(), 2);
  t.same(counter.mark(), { instance: counter.instance, seq: 2 });
  t.not(new IngestCounter().instance, counter.instance, 'a restarted control is another instance, counting from 0 again');
});

t.test('the ingested line goes right before its coverage line, in the same write, and is skipped with it', async (t) => {
  const written: string[] = [];
  const conn = { gatewayId: 'gw-a', closed: false, coverageLine: null, coverageAt: 0, res: { write: (s: string) => written.push(s) } };
  const members = [{ id: 'gw-a', weight: 1 }];
  const coverage = { paused: false, manual: false, automatic: false, free: 5 * CALL, min_free: CALL, largest_call: CALL };
  const write = (free: number, now: number, seq: number | null) =>
    writeCoverageLine(
      conn as unknown as Connection,
      { coverage: { ...coverage, free }, seen: seq === null ? null : { instance: 'ctl-run', seq } },
      members,
      now,
    );
  write(5 * CALL, 1_000, 3);
  t.same(written, ['{"type":"ingested","instance":"ctl-run","seq":3}\n{"type":"coverage","covered":true,"allowance":5500}\n']);
  write(5 * CALL, 1_500, 4);
  t.equal(written.length, 1, 'the same coverage line within the interval: neither is written');
  write(4 * CALL, 2_000, 5);
  t.equal(written[1], '{"type":"ingested","instance":"ctl-run","seq":5}\n{"type":"coverage","covered":true,"allowance":4400}\n');
  write(3 * CALL, 2_500, null);
  t.equal(written[2], '{"type":"coverage","covered":true,"allowance":3300}\n', 'no count: the coverage line alone, as before');
});

forEachStore(t, (t, kind) => {
  t.test('acks number the batches; a line names the count its evaluation took before reading', async (t) => {
    const control = await startTestControl(t, { store: kind, coverageCheckMs: 3_600_000 });
    const gw = await liveGateway(t, control, 'gw-a');
    keepRenewing(t, control, gw);
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 10 * CALL })).status, 201);
    await addEndpoint(control, 'ep', { price: 1_000, premium: 100 });
    const failure = () => outcome({ outcome: 'server_error', endpoint_id: 'ep' });
    const lineAfter = async (what: string, allowance: number) => {
      await control.handle.coverage.runOnce();
      const i = await waitFor(() => gw.coverage.findIndex((c) => c.allowance === allowance) + 1, `${what}: allowance ${allowance}`);
      return { line: gw.coverage[i - 1]!, ingested: gw.ingested[i - 1] ?? null };
    };

    const first = await lineAfter('before any batch', 10 * CALL);
    t.ok(first.ingested !== null, 'the coverage line comes after an ingested line');
    const instance = first.ingested!.instance;
    t.ok(InstanceId.safeParse(instance).success);
    t.equal(first.ingested!.seq, 0, 'nothing ingested yet');

    const ack1 = await ingest(control, [failure()]);
    t.ok(OutcomeAck.safeParse(ack1).success, 'the answer is an OutcomeAck');
    t.match(ack1, { accepted: 1, duplicates: 0, ingest_seq: 1, ingest_instance: instance }, 'the first batch: 1, by the same process');

    // A batch committed while the evaluation reads: the line must not claim it, though it may reflect it.
    const lps = control.handle.ctx.store.lps;
    const capital = lps.capital.bind(lps);
    const during: unknown[] = [];
    lps.capital = async (...args) => {
      if (during.length === 0) during.push(await ingest(control, [failure()]));
      return capital(...args);
    };
    const second = await lineAfter('a batch during the reads', 8 * CALL);
    lps.capital = capital;
    t.match(during, [{ ingest_seq: 2, ingest_instance: instance }], 'the batch during the reads is 2');
    t.same(second.ingested, { type: 'ingested', instance, seq: 1 }, 'the count taken before the reads: 1, not 2');

    const batch3 = [failure()];
    t.match(await ingest(control, batch3), { accepted: 1, ingest_seq: 3 });
    t.match(await ingest(control, batch3), { accepted: 0, duplicates: 1, ingest_seq: 4 }, 'a batch sent again is numbered too');
    const third = await lineAfter('after two more batches', 7 * CALL);
    t.same(third.ingested, { type: 'ingested', instance, seq: 4 });
  });
});
