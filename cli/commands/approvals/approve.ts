/**
 * `svcctl approvals approve ID`: the second operator's yes; the action happens now, as its
 * requester asked it. For an operator added or rotated, its new token is printed here, once.
 */
import type { KeyChange } from '../../../protocol/admin';
import type { ApprovedView } from '../../../protocol/approvals';
import type { IssuedOperatorToken, RotatedOperatorToken } from '../../../protocol/operators';
import type { Deps } from '../../deps';
import { jsonText } from '../../output';
import { EXIT_OK } from '../../exit-codes';
import type { FundView, MarkPaidView } from '../../../protocol/settlement';
import type { RotateKeyView } from '../../../protocol/receipts';
import { paidLines } from '../payouts/mark-paid';
import { fundedLines } from '../pool/fund';
import { walletLines } from '../keys/wallet';
import { depositLines } from '../accounts/deposit';
import { accountWalletLine } from '../accounts/wallet';
import { refillLines, refillClearedLine } from '../accounts/refill';
import type { AccountChange, DepositView, RefillChange } from '../../../protocol/accounts';
import type { LpDepositView, LpView, WithdrawalView } from '../../../protocol/lps';
import { cancelledLines, lpAddedLines, lpDepositLines, withdrawnLines } from '../lps/render';
import { addedLines } from '../operators/render';
import { operatorRotatedLines } from '../operators/rotate';
import { rotatedLines } from '../receipts/rotate-key';

/** What the action answered, printed as its own command prints it. */
function resultLines(action: ApprovedView['approval']['action'], result: ApprovedView['result']): string[] {
  if (action === 'pool.fund') return fundedLines(result as FundView);
  if (action === 'payouts.mark_paid') return paidLines(result as MarkPaidView);
  if (action === 'keys.wallet.attach' || action === 'keys.wallet.detach') return walletLines(result as KeyChange);
  if (action === 'accounts.deposit') return depositLines(result as DepositView);
  if (action === 'accounts.wallet.attach' || action === 'accounts.wallet.detach') return [accountWalletLine(result as AccountChange)];
  if (action === 'accounts.refill.set') return refillLines(result as RefillChange);
  if (action === 'accounts.refill.clear') return [refillClearedLine(result as AccountChange)];
  if (action === 'lps.add') return lpAddedLines(result as LpView);
  if (action === 'lps.deposit') return lpDepositLines(result as LpDepositView);
  if (action === 'lps.withdraw') return withdrawnLines(result as WithdrawalView);
  if (action === 'lps.cancel') return cancelledLines(result as WithdrawalView);
  if (action === 'operators.add') return addedLines(result as IssuedOperatorToken);
  if (action === 'operators.rotate') return operatorRotatedLines(result as RotatedOperatorToken);
  if (action === 'receipts.rotate_key') return rotatedLines(result as RotateKeyView);
  // Every action this svcctl knows is printed above (`never` here fails the build when one is
  // added without its lines); a newer control's action it does not know is printed as JSON.
  const unknown: never = action;
  return [`${String(unknown)}: ${jsonText(result)}`];
}

export async function run(opts: { id: string; json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.post<ApprovedView>(`/_admin/v1/approvals/${encodeURIComponent(opts.id)}/approve`, {});
  if (opts.json) deps.out.json(answer);
  else {
    const a = answer.approval;
    deps.out.line(`Approved ${a.id}: ${a.action}${a.target === null ? '' : ` on ${a.target}`}, asked by ${a.requested_by}, done.`);
    for (const line of resultLines(a.action, answer.result)) deps.out.line(line);
  }
  return EXIT_OK;
}
