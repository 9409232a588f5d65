/**
 * The client address behind 0, 1 or 2 trusted proxies, one rule for the gateway, the public
 * API and application submissions: only the entry the nearest trusted proxy vouches for is
 * read, and a missing, short or garbled header falls back to the socket.
 */
import t from 'tap';
import { clientAddress } from '../../runtime/client-address';

const SOCKET = '10.0.0.9';
const req = (xff?: string | string[], socket: string | null = SOCKET) => ({
  socket: { remoteAddress: socket ?? undefined },
  headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
});

t.test('X-Forwarded-For by trusted hops', async (t) => {
  const cases: [string, string | string[] | undefined, number, string][] = [
    ['no trusted hops: the socket, the header ignored', '1.1.1.1', 0, SOCKET],
    ['no trusted hops, no header', undefined, 0, SOCKET],
    ['one trusted proxy: the entry it appended', '6.6.6.6, 1.1.1.1', 1, '1.1.1.1'],
    ['one trusted proxy, one entry', '1.1.1.1', 1, '1.1.1.1'],
    ['two trusted proxies: the second entry from the right', '6.6.6.6, 1.1.1.1, 2.2.2.2', 2, '1.1.1.1'],
    ['two trusted proxies, exactly two entries', '1.1.1.1, 2.2.2.2', 2, '1.1.1.1'],
    ['missing header behind a trusted proxy: the socket', undefined, 1, SOCKET],
    ['empty header: the socket', '', 1, SOCKET],
    ['only commas: the socket', ' , ,', 1, SOCKET],
    ['empty entries are skipped', '1.1.1.1, , 2.2.2.2,', 2, '1.1.1.1'],
    ['more hops than entries: the socket, never the caller-written leftmost entry', '6.6.6.6', 2, SOCKET],
    ['more hops than entries (3 of 2)', '6.6.6.6, 1.1.1.1', 3, SOCKET],
    ['garbage at the trusted position: the socket', '1.1.1.1, not-an-address', 1, SOCKET],
    ['script text: the socket', '<script>alert(1)</script>', 1, SOCKET],
    ['"unknown" (RFC 7239 style): the socket', 'unknown', 1, SOCKET],
    ['garbage left of the trusted entry is never read', 'garbage, 1.1.1.1', 1, '1.1.1.1'],
    ['IPv4 with a port: the address', '1.1.1.1:5555', 1, '1.1.1.1'],
    ['IPv6', '2001:db8::1', 1, '2001:db8::1'],
    ['IPv6 in brackets', '[2001:db8::1]', 1, '2001:db8::1'],
    ['IPv6 in brackets with a port', '[2001:db8::1]:443', 1, '2001:db8::1'],
    ['IPv6 behind two proxies', '2001:db8::1, 2001:db8::2', 2, '2001:db8::1'],
    ['IPv4-mapped IPv6', '::ffff:192.0.2.1', 1, '::ffff:192.0.2.1'],
    ['unclosed bracket: the socket', '[2001:db8::1', 1, SOCKET],
    ['repeated headers are one list', ['6.6.6.6', '1.1.1.1, 2.2.2.2'], 2, '1.1.1.1'],
  ];
  for (const [name, xff, hops, expected] of cases) t.equal(clientAddress(req(xff), hops), expected, name);
});

t.test('an IPv6 socket, and a socket without an address', async (t) => {
  t.equal(clientAddress(req('1.1.1.1', '::1'), 0), '::1');
  t.equal(clientAddress(req(undefined, '::ffff:127.0.0.1'), 1), '::ffff:127.0.0.1');
  t.equal(clientAddress(req(undefined, null), 0), 'unknown', 'a closed socket has no address');
});
