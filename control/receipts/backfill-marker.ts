/**
 * The data dir's record that the receipts backfill ran (`receipts-backfilled.json`, mode 0600,
 * beside `control.db` and the signing key). The database keeps the same record
 * (`meta.receipts_backfilled`, migration 14); either one stops the backfill from running again,
 * so someone who can rewrite the database but not the data dir cannot reset it and have control
 * sign a rewritten batch on its next start. The file's content is for operators; only its
 * existence counts.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** File in the data dir recording that the receipts backfill ran. */
export const BACKFILL_MARKER_FILE = 'receipts-backfilled.json';

/** Where the store records the backfill outside the database. */
export interface BackfillMarker {
  exists(): boolean;
  /** Record that the backfill ran at `at` (ms), signing `written` receipts (0 when it did not run here). */
  write(at: number, written: number): void;
}

/** The marker file of `dataDir`. */
export function backfillMarker(dataDir: string): BackfillMarker {
  const file = join(dataDir, BACKFILL_MARKER_FILE);
  return {
    exists: () => existsSync(file),
    write: (at, written) => {
      const record = { backfilled_at: new Date(at).toISOString(), receipts_written: written };
      try {
        writeFileSync(file, JSON.stringify(record) + '\n', { mode: 0o600, flag: 'wx' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    },
  };
}
