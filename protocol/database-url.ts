/**
 * A database URL as svc prints it (status, logs, config errors): the password masked, so
 * `postgres://u:secret@h:5432/db` shows as `postgres://u:***@h:5432/db`.
 */

/** What is printed for a value that does not parse as a URL: never any part of the value. */
export const UNPARSABLE_DATABASE_URL = '(not a URL; not shown)';

const MASK = '***';
/** How a PostgreSQL URL starts (the URL scheme is case-insensitive). */
const POSTGRES_URL = /^postgres(ql)?:\/\//i;
/** Query parameters a PostgreSQL client reads a secret from (node-postgres takes any parameter as a setting). */
const SECRET_PARAMS = ['password', 'sslpassword'];

export function maskDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return UNPARSABLE_DATABASE_URL;
  }
  // An `@` after the host means the parser did not find the credentials where a client might
  // (`postgres:u:p@h/db`, a password with an unescaped `/`): show nothing of it.
  if (`${parsed.pathname}${parsed.search}${parsed.hash}`.includes('@')) return UNPARSABLE_DATABASE_URL;
  if (parsed.password !== '') parsed.password = MASK;
  for (const name of SECRET_PARAMS) if (parsed.searchParams.has(name)) parsed.searchParams.set(name, MASK);
  return parsed.href;
}

/**
 * Whether `url` is a PostgreSQL URL svc accepts as `databaseUrl`: `postgres://` or
 * `postgresql://`, and one {@link maskDatabaseUrl} can show, so it can always be printed masked.
 */
export function isPostgresUrl(url: string): boolean {
  return POSTGRES_URL.test(url) && maskDatabaseUrl(url) !== UNPARSABLE_DATABASE_URL;
}

/**
 * The secrets written in a database URL (its password and secret parameters, as typed and
 * decoded), for taking them out of a message that might repeat them (a driver's error).
 */
export function databaseUrlSecrets(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const decode = (text: string): string => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  const values = [parsed.password, decode(parsed.password)];
  for (const pair of parsed.search.slice(1).split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    if (SECRET_PARAMS.includes(decode(name))) values.push(value, decode(value.replace(/\+/g, ' ')));
  }
  return [...new Set(values)].filter((value) => value !== '');
}
