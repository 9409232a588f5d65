/**
 * Payout wallets: Solana (base58 of exactly 32 bytes) or EVM (0x + 40 hex). Anything else is
 * refused, including base58 strings of the wrong byte length.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { encodeBase58 } from '../../protocol/base58';
import { WalletAddress, walletChain } from '../../protocol/wallet';

const SOL_WRAPPED = 'So11111111111111111111111111111111111111112';
const SOL_SYSTEM = '11111111111111111111111111111111';
const SOL_TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const EVM = '0x52908400098527886E0F7030069857D2E4169EE7';

/** A base58 string of `n` bytes whose first byte is not zero (so no leading '1'). */
function base58Of(n: number): string {
  const bytes = randomBytes(n);
  bytes[0] = 0x80 | bytes[0]!;
  return encodeBase58(bytes);
}

t.test('accepts real Solana and EVM addresses', async (t) => {
  const cases: [string, string][] = [
    [SOL_WRAPPED, 'solana'],
    [SOL_SYSTEM, 'solana'],
    [SOL_TOKEN_PROGRAM, 'solana'],
    [base58Of(32), 'solana'],
    [EVM, 'evm'],
    [EVM.toLowerCase(), 'evm'],
    ['0x' + 'ab'.repeat(20), 'evm'],
    ['0x' + '0'.repeat(40), 'evm'],
  ];
  for (const [address, chain] of cases) {
    t.equal(walletChain(address), chain, `${address} is ${chain}`);
    t.ok(WalletAddress.safeParse(address).success, `${address} passes the schema`);
  }
});

t.test('refuses everything else', async (t) => {
  const thirtyOne = base58Of(31);
  const thirtyThree = base58Of(33);
  const cases: [string, string][] = [
    [thirtyOne, `31-byte base58 (${thirtyOne.length} characters)`],
    [thirtyThree, '33-byte base58'],
    ['1' + SOL_TOKEN_PROGRAM, '33 bytes because of a leading 1'],
    [SOL_SYSTEM.slice(1), '31 ones: 31 zero bytes'],
    [SOL_TOKEN_PROGRAM.slice(0, -1) + '0', 'contains 0'],
    [SOL_TOKEN_PROGRAM.slice(0, -1) + 'O', 'contains O'],
    [SOL_TOKEN_PROGRAM.slice(0, -1) + 'I', 'contains I'],
    [SOL_TOKEN_PROGRAM.slice(0, -1) + 'l', 'contains l'],
    ['0x' + 'a'.repeat(39), '0x + 39 hex'],
    ['0x' + 'a'.repeat(41), '0x + 41 hex'],
    ['0x' + 'g'.repeat(40), '0x + non-hex'],
    ['0X' + 'a'.repeat(40), 'capital 0X'],
    ['52908400098527886E0F7030069857D2E4169EE7', '40 hex without 0x'],
    ['', 'empty'],
    ['not a wallet', 'words'],
  ];
  for (const [address, why] of cases) {
    t.equal(walletChain(address), null, `${why}: ${JSON.stringify(address)}`);
    const parsed = WalletAddress.safeParse(address);
    t.notOk(parsed.success, `${why}: schema refuses`);
    if (!parsed.success) t.match(parsed.error.issues[0]?.message ?? '', /Solana.*EVM/, 'the message says what is allowed');
  }
});

t.test('the schema trims surrounding whitespace', async (t) => {
  const parsed = WalletAddress.safeParse(`  ${SOL_WRAPPED}\n`);
  t.ok(parsed.success);
  if (parsed.success) t.equal(parsed.data, SOL_WRAPPED);
});
