/** `svcctl pool resume --note TEXT`: coverage again after an operator's pause (`pause.ts`). */
import type { Deps } from '../../deps';
import { sendPause } from './pause';

export const run = (opts: { note: string; json?: boolean }, deps: Deps): Promise<number> => sendPause(false, opts, deps);
