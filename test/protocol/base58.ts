/** Bitcoin-alphabet base58: known vectors, leading zeros, round trips, bad characters. */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { decodeBase58, encodeBase58 } from '../../protocol/base58';

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));

t.test('known vectors', async (t) => {
  const vectors: [string, string][] = [
    ['', ''],
    ['00', '1'],
    ['0000', '11'],
    ['000001', '112'],
    ['61', '2g'],
    ['626262', 'a3gV'],
    [Buffer.from('hello world').toString('hex'), 'StV1DL6CwTryKyV'],
    ['00'.repeat(32), '1'.repeat(32)],
    ['069b8857feab8184fb687f634618c035dac439dc1aeb3b5598a0f00000000001', 'So11111111111111111111111111111111111111112'],
  ];
  for (const [bytes, text] of vectors) {
    t.equal(encodeBase58(Buffer.from(bytes, 'hex')), text, `encode ${bytes || '(empty)'}`);
    t.equal(hex(decodeBase58(text)), bytes, `decode ${text || '(empty)'}`);
  }
});

t.test('round trip of random bytes, with and without leading zeros', async (t) => {
  const failures: string[] = [];
  for (let i = 0; i < 500; i++) {
    const len = i % 40;
    const bytes = randomBytes(len);
    if (i % 3 === 0 && len > 2) {
      bytes[0] = 0;
      bytes[1] = 0;
    }
    const text = encodeBase58(bytes);
    const back = decodeBase58(text);
    if (hex(back) !== bytes.toString('hex')) failures.push(bytes.toString('hex'));
    if (!/^[1-9A-HJ-NP-Za-km-z]*$/.test(text)) failures.push(`bad character in ${text}`);
  }
  t.same(failures, [], '500 round trips');
});

t.test('characters outside the alphabet decode to null', async (t) => {
  for (const text of ['0', 'O', 'I', 'l', 'abc0', '+', 'é', ' 2g', '2g ', 'ab-c']) {
    t.equal(decodeBase58(text), null, JSON.stringify(text));
  }
});
