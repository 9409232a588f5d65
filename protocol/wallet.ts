/**
 * Payout wallet addresses: Solana (base58 of a 32-byte public key) or EVM (`0x` + 40 hex).
 * Admission never depends on the wallet; it only decides where refunds are paid.
 */
import { z } from 'zod';
import { decodeBase58 } from './base58';

export type WalletChain = 'solana' | 'evm';

const EVM_PATTERN = /^0x[0-9a-fA-F]{40}$/;
const SOLANA_SHAPE = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

export const WALLET_HELP = 'a Solana address (base58 of 32 bytes, 32–44 characters) or an EVM address (0x followed by 40 hex digits)';

/** Which chain `address` belongs to, or null when it is neither. */
export function walletChain(address: string): WalletChain | null {
  if (EVM_PATTERN.test(address)) return 'evm';
  if (SOLANA_SHAPE.test(address)) {
    const bytes = decodeBase58(address);
    if (bytes !== null && bytes.length === 32) return 'solana';
  }
  return null;
}

export const WalletAddress = z
  .string()
  .trim()
  .refine((v) => walletChain(v) !== null, { message: `must be ${WALLET_HELP}` });
