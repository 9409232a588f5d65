/**
 * PostgreSQL schema migrations, applied in order by `migrate.ts` and tracked in the
 * `svc_schema_migrations` table. Numbered for this dialect alone: PostgreSQL's 1 is SQLite's 13
 * (`../migrations.ts`). One file per migration under `migrations/`. Append only: never edit a
 * migration that has shipped; add the next one, and its SQLite twin when both dialects change.
 *
 * Times are BIGINT milliseconds since the Unix epoch (UTC). Money is BIGINT micro-units.
 */
import m001 from './migrations/001-initial';
import m002 from './migrations/002-settled-batch-unchecked';
import m003 from './migrations/003-cluster';
import m004 from './migrations/004-gateway-attachment';
import m005 from './migrations/005-operators';
import m006 from './migrations/006-approvals';
import m007 from './migrations/007-outcomes-by-key';
import m008 from './migrations/008-shared-snapshots';
import m009 from './migrations/009-settled-calls';
import m010 from './migrations/010-call-ids-uuid';
import m011 from './migrations/011-accounts';
import m012 from './migrations/012-account-ledger';
import m013 from './migrations/013-prepaid';
import m014 from './migrations/014-pool-capital';
import m015 from './migrations/015-uncovered-calls';

export const PG_MIGRATIONS: readonly string[] = [m001, m002, m003, m004, m005, m006, m007, m008, m009, m010, m011, m012, m013, m014, m015];
