/**
 * The SDK's version and the User-Agent every request carries, read from this package's own
 * `package.json` (one level above `dist/`), so the two can never disagree. svc's public read
 * API admits `svc-monitor-sdk/<semver>` (and browsers) only.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- read at run time: package.json is outside the compiled src/
const pkg = require('../package.json') as { name: string; version: string };

export const SDK_NAME: string = pkg.name;
export const SDK_VERSION: string = pkg.version;
/** `svc-monitor-sdk/<version>`. */
export const USER_AGENT = `${SDK_NAME}/${SDK_VERSION}`;
