/**
 * Schema migrations, applied in order by `db.ts` and tracked with `PRAGMA user_version`.
 * One file per migration under `migrations/`. Append only: never edit a migration that has
 * shipped; add the next one.
 *
 * Times are INTEGER milliseconds since the Unix epoch (UTC). Money is INTEGER micro-units.
 */
import m001 from './migrations/001-keys-flags-endpoints';
import m002 from './migrations/002-sync-outcomes';
import m003 from './migrations/003-ledger';
import m004 from './migrations/004-rollups';
import m005 from './migrations/005-applications';
import m006 from './migrations/006-settlement-extra';
import m007 from './migrations/007-caller-error';
import m008 from './migrations/008-keys-list-indexes';
import m009 from './migrations/009-receipts';
import m010 from './migrations/010-receipt-subtrees';
import m011 from './migrations/011-public-pages';
import m012 from './migrations/012-gateway-shares';
import m013 from './migrations/013-drop-endpoint-time-index';
import m014 from './migrations/014-receipts-backfilled';
import m015 from './migrations/015-gateway-attachment';
import m016 from './migrations/016-operators';
import m017 from './migrations/017-approvals';
import m018 from './migrations/018-outcomes-by-key';
import m019 from './migrations/019-settled-calls';
import m020 from './migrations/020-accounts';
import m021 from './migrations/021-account-ledger';
import m022 from './migrations/022-prepaid';
import m023 from './migrations/023-pool-capital';
import m024 from './migrations/024-uncovered-calls';
import m025 from './migrations/025-settled-clamp-check';

export const MIGRATIONS: readonly string[] = [
  m001,
  m002,
  m003,
  m004,
  m005,
  m006,
  m007,
  m008,
  m009,
  m010,
  m011,
  m012,
  m013,
  m014,
  m015,
  m016,
  m017,
  m018,
  m019,
  m020,
  m021,
  m022,
  m023,
  m024,
  m025,
];
