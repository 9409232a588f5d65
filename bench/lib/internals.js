'use strict';
/**
 * The project's own modules the benches load in-process, each named once here with its type
 * taken from its TypeScript source: `npm run lint` type-checks bench/ (`bench/tsconfig.json`,
 * `checkJs`), so renaming a module or an export a bench uses fails there instead of at the
 * bench's next run. At run time they come from the build the bench runs (`distDir()`,
 * `lib/app.js`: `dist/`, or the copy the driver made of it), or from the build a caller names.
 *
 *   const { SqliteStore } = internal('control/store/index');
 */
const path = require('node:path');
const { distDir } = require('./app');

/**
 * Each key is the module's path from the repository root without its extension, and its type
 * `import()`s the source at that same path (a test keeps the two equal).
 *
 * @typedef {{
 *   'config/load': typeof import('../../config/load'),
 *   'control/admin/keys': typeof import('../../control/admin/keys'),
 *   'control/server': typeof import('../../control/server'),
 *   'control/settler/settler': typeof import('../../control/settler/settler'),
 *   'control/store/index': typeof import('../../control/store/index'),
 *   'control/keys': typeof import('../../control/keys'),
 *   'control/receipts/maker': typeof import('../../control/receipts/maker'),
 *   'demo/throwaway-postgres': typeof import('../../demo/throwaway-postgres'),
 *   'control/store/pg/store': typeof import('../../control/store/pg/store'),
 *   'gateway/control-link/sync-post': typeof import('../../gateway/control-link/sync-post'),
 *   'gateway/journal/journal': typeof import('../../gateway/journal/journal'),
 *   'gateway/metrics': typeof import('../../gateway/metrics'),
 *   'gateway/proxy/index': typeof import('../../gateway/proxy/index'),
 *   'gateway/request/handler': typeof import('../../gateway/request/handler'),
 *   'protocol/keys': typeof import('../../protocol/keys'),
 *   'protocol/runtime': typeof import('../../protocol/runtime'),
 *   'runtime/log': typeof import('../../runtime/log'),
 *   'protocol/response-schema': typeof import('../../protocol/response-schema'),
 * }} Internals
 */

/**
 * The module `name` of the build in `dist` (default: the one the bench runs).
 *
 * @template {keyof Internals} M
 * @param {M} name
 * @param {string} [dist]
 * @returns {Internals[M]}
 */
function internal(name, dist = distDir()) {
  return require(path.join(dist, `${name}.js`));
}

module.exports = { internal };
