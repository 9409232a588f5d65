/**
 * The sync client hands each `coverage` line to the gateway's coverage with the `ingested` line
 * right before it (gateway/state/sync-client.ts): the pair control writes in one write; a
 * coverage line after any other line, or after an `ingested` line that does not parse, comes
 * with none; an `ingested` line with members it does not know is taken; a line type it does not
 * know is passed over, as a gateway older than `ingested` lines passes over those.
 */
import t from 'tap';
import http from 'node:http';
import { join } from 'node:path';
import { Coverage } from '../../gateway/state/coverage';
import { SnapshotFile } from '../../gateway/state/snapshot-file';
import { SyncClient } from '../../gateway/state/sync-client';
import type { IngestedLine } from '../../protocol/snapshot';
import { captureLogs } from '../fixtures/control';
import { listen, waitFor } from './fixtures/harness.cts';
import { tempDir } from './fixtures/temp-dir.cts';

/** A coverage that keeps what it was handed. */
class Recording extends Coverage {
  readonly applied: { allowance: unknown; ingested: IngestedLine | null }[] = [];

  override apply(value: unknown, ingested: IngestedLine | null = null): boolean {
    this.applied.push({ allowance: (value as { allowance?: unknown } | null)?.allowance, ingested });
    return super.apply(value, ingested);
  }
}

const coverage = (allowance: number) => JSON.stringify({ type: 'coverage', covered: true, allowance });
const ingested = (seq: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'ingested', instance: 'ctl-x', seq, ...extra });

t.test('each coverage line with the ingested line right before it, or none', async (t) => {
  const lines = [
    ingested(3) + '\n' + coverage(5_000),
    coverage(4_000),
    ingested(4),
    '{"type":"beat"}',
    coverage(3_000),
    ingested(5, { later: 'a member this gateway does not know' }),
    '{"type":"future","what":"a line type this gateway does not know"}',
    coverage(2_000),
    ingested(6, { later: true }),
    coverage(1_000),
    '{"type":"ingested","instance":"not an id!","seq":7}',
    coverage(900),
    '{"type":"ingested","instance":"ctl-x","seq":',
    coverage(850),
    ingested(8),
    '',
    coverage(800),
  ];
  const server = http.createServer((req, res) => {
    if (!(req.url ?? '').startsWith('/_sync/v1/stream')) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(lines.join('\n') + '\n');
  });
  const port = await listen(t, server);
  const dir = tempDir(t);
  const logs = captureLogs();
  const c = new Recording();
  const client = new SyncClient({
    controlUrl: `http://127.0.0.1:${port}`,
    syncToken: 'token',
    gatewayId: 'gw-1',
    engine: 'undici',
    file: new SnapshotFile(join(dir, 'snapshot')),
    log: logs.log,
    onState: () => undefined,
    coverage: c,
    initial: null,
  });
  t.teardown(() => {
    client.stop();
    server.closeAllConnections();
  });
  client.start();
  await waitFor(() => c.applied.length === 8, 'every coverage line');
  const x = (seq: number) => ({ type: 'ingested', instance: 'ctl-x', seq });
  t.same(c.applied, [
    { allowance: 5_000, ingested: x(3) },
    { allowance: 4_000, ingested: null },
    { allowance: 3_000, ingested: null },
    { allowance: 2_000, ingested: null },
    { allowance: 1_000, ingested: x(6) },
    { allowance: 900, ingested: null },
    { allowance: 850, ingested: null },
    { allowance: 800, ingested: x(8) },
  ]);
  t.equal(c.state!.allowance, 800);
  t.equal(
    logs.records().filter((r) => r.msg === 'ingested line ignored: it does not parse').length,
    2,
    'each ingested line that does not parse (not its schema, not JSON) is logged',
  );
  t.equal(client.lastNack, null, 'nothing refused: side lines are never nacked');
});
