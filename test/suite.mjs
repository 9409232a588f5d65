// `npm test`'s last step: the whole suite under tap with the coverage floors of `.taprc`
// enforced. Arguments are passed on to tap.
//
// Without PostgreSQL (and not under CI=true, where its absence fails the PostgreSQL halves),
// every PostgreSQL half skips, so the PostgreSQL store's modules (control/store/pg/) would be
// counted as uncovered code; they are left out of the report instead, and the floors apply to
// what ran. With PostgreSQL, both halves run and every module counts.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { clusterUnavailable } = require('../dist/demo/throwaway-postgres.js');

const args = ['--no-allow-incomplete-coverage', '--coverage-report=text-summary', ...process.argv.slice(2)];
const missing = clusterUnavailable();
if (missing !== null && process.env.CI !== 'true') {
  console.log(
    `PostgreSQL is not available (${missing}): the PostgreSQL halves of the store tests skip, and ` +
      'control/store/pg/ is left out of the coverage report. Install it with `apt-get install -y postgresql` to run them.',
  );
  args.push('--coverage-exclude=control/store/pg/**');
}
const run = spawnSync('tap', args, { stdio: 'inherit', shell: false });
process.exit(run.status ?? 1);
