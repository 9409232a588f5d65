/**
 * node-postgres' `Client` as the store opens its connections (its pools' `Client`, the
 * listening connection): one whose connection fails to open closes its socket at once.
 *
 * node-postgres leaves the socket of a failed connection open when the failure is its own
 * rather than the server's: a URL without the password a server asks for fails in the middle
 * of the SCRAM exchange (`client password must be a string`), while the server waits for the
 * client's answer, and the pool drops the client without ending it. The open socket keeps the
 * process alive: a control that cannot open its store would print the error and exit only when
 * the server gave up on the exchange (`authentication_timeout`, 60 s by default).
 */
import { Client } from 'pg';

type ConnectCallback = ((err: Error) => void) | ((err: null, c: Client) => void);

export class PgClient extends Client {
  override connect(): Promise<Client>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<Client> | void {
    if (callback === undefined) {
      return new Promise((resolve, reject) => this.connect((err: Error | null) => (err ? reject(err) : resolve(this))));
    }
    super.connect((err: Error | null) => {
      if (err) {
        this.connection.stream.destroy();
        (callback as (err: Error) => void)(err);
      } else (callback as (err: null, c: Client) => void)(null, this);
    });
  }
}
