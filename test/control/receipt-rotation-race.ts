/**
 * Receipt key rotations asked at once, through one control: each is a rotation of its own, run
 * one after another (the receipts core holds one prepared key, which a second rotation would
 * replace), so every request answers 200 and the keys form one chain, each rotation's
 * `previous_kid` the key before it; the last one signs, and the audit log has one row each.
 * On both stores; on PostgreSQL, before they were run one at a time, all but one failed with 500.
 */
import t from 'tap';
import { startTestControl } from '../fixtures/control';
import { forEachStore } from '../fixtures/stores';

const ROTATIONS = 5;

forEachStore(t, async (t, kind) => {
  // On PostgreSQL each rotation's transaction waits on the database, where the next one can start.
  const c = await startTestControl(t, { store: kind });
  const first = (await c.request(`${c.urls.indexer}/api/receipts/keys`)).body.keys[0].kid as string;
  const answers = await Promise.all(Array.from({ length: ROTATIONS }, () => c.admin('POST', '/_admin/v1/receipts/rotate-key', {})));
  t.same(
    answers.map((a) => a.status),
    Array.from({ length: ROTATIONS }, () => 200),
    answers.map((a) => a.text).join('\n'),
  );
  const byPrevious = new Map(answers.map((a) => [a.body.previous_kid as string, a.body.kid as string]));
  t.equal(byPrevious.size, ROTATIONS, 'each rotation replaced a different key');
  const chain = [first];
  while (byPrevious.has(chain[chain.length - 1]!)) chain.push(byPrevious.get(chain[chain.length - 1]!)!);
  t.equal(chain.length, ROTATIONS + 1, `one chain from the first key: ${chain.join(' → ')}`);
  const now = (await c.request(`${c.urls.indexer}/api/receipts/keys`)).body.keys as { kid: string }[];
  t.equal(now[0]!.kid, chain[ROTATIONS], 'the last rotation’s key signs');
  t.same(new Set(now.map((k) => k.kid)), new Set(chain), 'every key of the chain is published');
  const audit = (await c.admin('GET', '/_admin/v1/audit?action=receipts.rotate_key')).body.entries as unknown[];
  t.equal(audit.length, ROTATIONS, 'one audit row each');
});
