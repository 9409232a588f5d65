/**
 * RFC 9162 §2.1 Merkle trees: the RFC 6962 reference test vectors (the eight leaf inputs
 * every Certificate Transparency implementation tests against, their subtree hashes and the
 * root of each prefix), inclusion proofs read off those subtree hashes, and for every tree
 * size up to 70 every root and audit path against an independent construction written here
 * straight from the RFC's recursive definitions (Buffers and `createHash`, no shared code).
 * Verification (§2.1.3.2) accepts exactly the right proofs.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import {
  emptyRoot,
  fromHex,
  inclusionPath,
  leafHash,
  nodeHash,
  rootFromInclusionProof,
  rootOf,
  subtreeRoots,
  toHex,
  verifyInclusion,
} from '../../protocol/merkle';

// RFC 6962 test data (the inputs and hashes of the CT reference implementations).
const LEAF_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'];
const NODE_HASHES = [
  [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
    '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
    '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
    'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
    'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
    '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
  ],
  [
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
    '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
    'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
  ],
  ['d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'],
  ['5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328'],
];
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

const leafHashes = LEAF_INPUTS.map((hex) => leafHash(Buffer.from(hex, 'hex')));
const hex = (h: string) => toHex(h);
const nh = (level: number, i: number) => fromHex(NODE_HASHES[level]![i]!)!;

// ---------------------------------------------------------------------------------------
// An independent reference, written from RFC 9162 §2.1.1 and §2.1.3.1 as stated.

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const refLeaf = (data: Buffer) => sha(Buffer.of(0), data);
/** The largest power of two smaller than n (n > 1). */
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
function refMth(d: Buffer[]): Buffer {
  if (d.length === 0) return sha();
  if (d.length === 1) return refLeaf(d[0]!);
  const k = split(d.length);
  return sha(Buffer.of(1), refMth(d.slice(0, k)), refMth(d.slice(k)));
}
function refPath(m: number, d: Buffer[]): Buffer[] {
  if (d.length === 1) return [];
  const k = split(d.length);
  return m < k ? [...refPath(m, d.slice(0, k)), refMth(d.slice(k))] : [...refPath(m - k, d.slice(k)), refMth(d.slice(0, k))];
}

t.test('RFC 6962 vectors: leaf hashes, subtree hashes and the root of every prefix', async (t) => {
  t.same(leafHashes.map(hex), NODE_HASHES[0], 'leaf hashes');
  t.equal(hex(nodeHash(leafHashes[0]!, leafHashes[1]!)), NODE_HASHES[1]![0], 'a node hash');
  t.equal(hex(emptyRoot()), ROOTS[0], 'the empty tree');
  for (let n = 0; n <= 8; n++) t.equal(hex(rootOf(leafHashes.slice(0, n))), ROOTS[n], `root of the first ${n}`);
});

t.test('RFC 6962 vectors: audit paths read off the subtree hashes, and they verify', async (t) => {
  const cases: { index: number; size: number; path: string[] }[] = [
    { index: 0, size: 1, path: [] },
    { index: 0, size: 8, path: [nh(0, 1), nh(1, 1), nh(2, 1)] },
    { index: 5, size: 8, path: [nh(0, 4), nh(1, 3), nh(2, 0)] },
    { index: 2, size: 3, path: [nh(1, 0)] },
    // Leaf 6 of 7 has no sibling at the bottom: it is lifted, so the path starts one level up.
    { index: 6, size: 7, path: [nh(1, 2), nh(2, 0)] },
    { index: 4, size: 5, path: [nh(2, 0)] },
    { index: 1, size: 5, path: [nh(0, 0), nh(1, 1), leafHashes[4]!] },
  ];
  for (const c of cases) {
    const { path, root } = inclusionPath(leafHashes.slice(0, c.size), c.index);
    t.same(path.map(hex), c.path.map(hex), `path of leaf ${c.index} in ${c.size}`);
    t.equal(hex(root), ROOTS[c.size], `root of ${c.size}`);
    t.ok(verifyInclusion(c.index, c.size, leafHashes[c.index]!, c.path, fromHex(ROOTS[c.size])!), `leaf ${c.index} of ${c.size} verifies`);
  }
});

t.test('every root and path up to 70 leaves equals the independent construction', async (t) => {
  const data = Array.from({ length: 70 }, (_, i) => Buffer.from(`leaf ${i} ${'x'.repeat(i % 5)}`));
  const hashes = data.map((d) => leafHash(d));
  let mismatches = 0;
  let checked = 0;
  for (let n = 1; n <= data.length; n++) {
    const d = data.slice(0, n);
    const root = refMth(d);
    if (hex(rootOf(hashes.slice(0, n))) !== root.toString('hex')) mismatches++;
    for (let m = 0; m < n; m++) {
      checked++;
      const mine = inclusionPath(hashes.slice(0, n), m);
      const ref = refPath(m, d).map((b) => b.toString('hex'));
      if (JSON.stringify(mine.path.map(hex)) !== JSON.stringify(ref)) mismatches++;
      if (!verifyInclusion(m, n, hashes[m]!, mine.path, mine.root)) mismatches++;
    }
  }
  t.equal(checked, (70 * 71) / 2, 'every leaf of every size');
  t.equal(mismatches, 0, 'roots, paths and verification agree with the reference');
});

t.test('runs of 2^k leaves: their roots make the same tree, and paths split at the run', async (t) => {
  const data = Array.from({ length: 100 }, (_, i) => Buffer.from(`run leaf ${i}`));
  const hashes = data.map((d) => leafHash(d));
  let mismatches = 0;
  let checked = 0;
  for (const k of [0, 1, 2, 3]) {
    const run = 2 ** k;
    for (let n = 1; n <= data.length; n++) {
      const tree = hashes.slice(0, n);
      const runs = subtreeRoots(tree, k);
      if (runs.length !== Math.ceil(n / run)) mismatches++;
      if (rootOf(runs) !== rootOf(tree)) mismatches++;
      for (let m = 0; m < n; m++) {
        checked++;
        const r = Math.floor(m / run);
        const inner = inclusionPath(tree.slice(r * run, r * run + run), m - r * run);
        if (inner.root !== runs[r]) mismatches++;
        const joined = [...inner.path, ...inclusionPath(runs, r).path].map(hex);
        if (JSON.stringify(joined) !== JSON.stringify(refPath(m, data.slice(0, n)).map((b) => b.toString('hex')))) mismatches++;
      }
    }
  }
  t.equal(checked, 4 * ((100 * 101) / 2));
  t.equal(mismatches, 0, 'run roots, roots and split paths agree with the reference');
  t.same(subtreeRoots(hashes.slice(0, 3), 6), [rootOf(hashes.slice(0, 3))], 'one short run');
});

t.test('verification refuses every wrong proof (RFC 9162 §2.1.3.2)', async (t) => {
  const size = 7;
  const tree = leafHashes.slice(0, size);
  const root = rootOf(tree);
  const { path } = inclusionPath(tree, 3);
  t.ok(verifyInclusion(3, size, tree[3]!, path, root), 'the right proof');
  t.notOk(verifyInclusion(2, size, tree[3]!, path, root), 'another index');
  t.notOk(verifyInclusion(3, 4, tree[3]!, path, root), 'a size whose tree has another shape');
  t.notOk(verifyInclusion(6, 7, tree[3]!, path, root), 'the last leaf, whose path is shorter');
  t.notOk(verifyInclusion(3, size, tree[2]!, path, root), 'another leaf');
  t.notOk(verifyInclusion(3, size, tree[3]!, [...path].reverse(), root), 'the path reversed');
  t.notOk(verifyInclusion(3, size, tree[3]!, path.slice(1), root), 'a hash missing');
  t.notOk(verifyInclusion(3, size, tree[3]!, [...path, path[0]!], root), 'a hash too many');
  t.notOk(verifyInclusion(3, size, tree[3]!, path, rootOf(leafHashes.slice(0, 6))), 'another root');
  t.notOk(verifyInclusion(0, 3, tree[0]!, [tree[1]!], rootOf(tree.slice(0, 2))), 'a path of a smaller tree, claimed for a larger one');
  t.equal(rootFromInclusionProof(7, 7, tree[0]!, []), null, 'index past the end');
  t.equal(rootFromInclusionProof(-1, 7, tree[0]!, path), null, 'negative index');
  t.equal(rootFromInclusionProof(0, 1, tree[0]!, [tree[1]!]), null, 'a path for a one-leaf tree');
  const flipped = Buffer.from(path[0]!, 'latin1');
  flipped[5]! ^= 1;
  t.notOk(verifyInclusion(3, size, tree[3]!, [flipped.toString('latin1'), ...path.slice(1)], root), 'one bit flipped');
  t.throws(() => inclusionPath(tree, 7), RangeError);
  t.throws(() => nodeHash('short', tree[0]!), TypeError);
});

t.test('a string leaf is hashed as its UTF-8 bytes', async (t) => {
  for (const text of ['', '{"batch":1}', 'é and 😀 and \u0000']) {
    t.equal(hex(leafHash(text)), refLeaf(Buffer.from(text, 'utf8')).toString('hex'), JSON.stringify(text));
  }
});

t.test('hex at the wire', async (t) => {
  t.equal(hex(fromHex(ROOTS[8])!), ROOTS[8], 'round trip');
  t.equal(fromHex(ROOTS[8]!.toUpperCase()), null, 'lowercase only');
  t.equal(fromHex(ROOTS[8]!.slice(1)), null, '63 digits');
  t.equal(fromHex(`${ROOTS[8]!.slice(1)}g`), null, 'not hex');
  t.equal(fromHex(42), null, 'not a string');
});
