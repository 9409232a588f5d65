/**
 * The User-Agent allow-list of the public read API (docs/design.md §7): browsers and
 * allowed products (`svc-monitor-sdk/<semver>` by default) pass; default command-line HTTP
 * clients, generic server runtimes, empty and unrecognised User-Agents get 403
 * `svc_forbidden_user_agent` with a body that says how to resend.
 *
 * Order of the checks: an allowed product at the start of the header passes (an SDK may add
 * its runtime after its own token); then a known client or runtime token anywhere refuses
 * (so a browser-shaped string that names one is still refused); then a browser shape passes.
 * Everything else is refused: this is an allow-list, the known clients only sharpen the message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendProblem } from '../../runtime/http';

/** The SDK's User-Agent, quoted in every refusal. */
export const SDK_USER_AGENT_EXAMPLE = 'svc-monitor-sdk/0.1.0';

type Family = 'command-line HTTP client' | 'server runtime HTTP client';

/** Known non-browser clients: a name for the message, its family, and how to spot it. */
const KNOWN_CLIENTS: readonly { name: string; family: Family; pattern: RegExp }[] = [
  { name: 'curl', family: 'command-line HTTP client', pattern: /(^|[\s(;])curl\//i },
  { name: 'Wget', family: 'command-line HTTP client', pattern: /(^|[\s(;])wget\//i },
  { name: 'HTTPie', family: 'command-line HTTP client', pattern: /(^|[\s(;])httpie\//i },
  { name: 'python-requests', family: 'command-line HTTP client', pattern: /python-requests\//i },
  { name: 'Python-urllib', family: 'command-line HTTP client', pattern: /python-urllib\//i },
  { name: 'aiohttp', family: 'command-line HTTP client', pattern: /(^|[\s(;])aiohttp\//i },
  { name: 'httpx', family: 'command-line HTTP client', pattern: /(^|[\s(;])(python-)?httpx\//i },
  { name: 'Python', family: 'command-line HTTP client', pattern: /^python\//i },
  { name: 'Go-http-client', family: 'command-line HTTP client', pattern: /go-http-client\//i },
  { name: 'okhttp', family: 'command-line HTTP client', pattern: /(^|[\s(;])okhttp\//i },
  { name: 'Java', family: 'command-line HTTP client', pattern: /^java([\s/-]|$)/i },
  { name: 'Apache-HttpClient', family: 'command-line HTTP client', pattern: /apache-httpclient\//i },
  { name: 'libwww-perl', family: 'command-line HTTP client', pattern: /libwww-perl\/|(^|\s)lwp-/i },
  { name: 'PostmanRuntime', family: 'command-line HTTP client', pattern: /postmanruntime\//i },
  { name: 'Insomnia', family: 'command-line HTTP client', pattern: /^insomnia\//i },
  { name: 'Ruby', family: 'command-line HTTP client', pattern: /^ruby([\s/]|$)|(^|\s)faraday\b/i },
  { name: 'Guzzle', family: 'command-line HTTP client', pattern: /guzzlehttp\//i },
  { name: 'PHP', family: 'command-line HTTP client', pattern: /^php\b/i },
  { name: 'Dart', family: 'command-line HTTP client', pattern: /^dart\//i },
  { name: 'reqwest', family: 'command-line HTTP client', pattern: /(^|\s)reqwest\//i },
  { name: 'hyper', family: 'command-line HTTP client', pattern: /^hyper\//i },
  { name: 'ApacheBench', family: 'command-line HTTP client', pattern: /^apachebench\//i },
  { name: 'k6', family: 'command-line HTTP client', pattern: /(^|\s)k6\//i },
  { name: 'Scrapy', family: 'command-line HTTP client', pattern: /(^|\s)scrapy\//i },
  { name: 'node', family: 'server runtime HTTP client', pattern: /^node([\s/]|$)|(^|\s)node\.js\//i },
  { name: 'undici', family: 'server runtime HTTP client', pattern: /(^|[\s(;])undici\b/i },
  { name: 'node-fetch', family: 'server runtime HTTP client', pattern: /(^|[\s(;])node-fetch\b/i },
  { name: 'axios', family: 'server runtime HTTP client', pattern: /(^|[\s(;])axios\//i },
  { name: 'got', family: 'server runtime HTTP client', pattern: /^got([\s/]|$)/i },
  { name: 'superagent', family: 'server runtime HTTP client', pattern: /(^|[\s(;])(node-)?superagent\b/i },
  { name: 'Deno', family: 'server runtime HTTP client', pattern: /(^|[\s(;])deno\//i },
  { name: 'Bun', family: 'server runtime HTTP client', pattern: /(^|[\s(;])bun\//i },
];

/**
 * A browser: `Mozilla/5.0 (<platform>)` followed by a rendering engine token (Blink and
 * WebKit say AppleWebKit, Firefox says Gecko, IE 11 says "like Gecko").
 */
const BROWSER = /^Mozilla\/5\.0 \([^)]+\) (AppleWebKit\/\d|Gecko\/\d|like Gecko)/;

/** `<product>/<semver>` at the start, then the end or more product tokens. */
function productPattern(product: string): RegExp {
  const name = product.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${name}/\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?(\\+[0-9A-Za-z.-]+)?(\\s|$)`, 'i');
}

export type UaVerdict = { allowed: true; as: string } | { allowed: false; reason: string };

export class UserAgentFilter {
  private readonly products: { name: string; pattern: RegExp }[];
  private readonly browsers: boolean;
  private readonly exempt: ReadonlySet<string>;
  /** What the refusal says is accepted. */
  readonly accepted: string[];

  /**
   * @param allow   `public.userAgentAllow`: `browser` and product names, comma-separated.
   * @param exempt  `public.userAgentExemptPaths`: `none` or paths served to any User-Agent.
   */
  constructor(allow: string, exempt: string) {
    const entries = allow
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    this.browsers = entries.includes('browser');
    this.products = entries.filter((e) => e !== 'browser').map((name) => ({ name, pattern: productPattern(name) }));
    this.exempt = new Set(
      exempt === 'none'
        ? []
        : exempt
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
    );
    this.accepted = [...(this.browsers ? ['a web browser'] : []), ...this.products.map((p) => `${p.name}/<semver>`)];
  }

  /** Decide on a User-Agent header value. */
  check(userAgent: string | undefined): UaVerdict {
    const ua = (userAgent ?? '').trim();
    if (ua === '') return { allowed: false, reason: 'an empty User-Agent is not allowed' };
    for (const product of this.products) if (product.pattern.test(ua)) return { allowed: true, as: product.name };
    for (const client of KNOWN_CLIENTS) {
      if (client.pattern.test(ua)) return { allowed: false, reason: `${client.name} is a ${client.family}, which is not allowed` };
    }
    if (this.browsers && BROWSER.test(ua)) return { allowed: true, as: 'browser' };
    return { allowed: false, reason: 'this User-Agent is not on the allow-list' };
  }

  /** Let `req` through, or answer 403 `svc_forbidden_user_agent`. Returns whether it may go on. */
  admit(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
    if (this.exempt.has(pathname)) return true;
    const verdict = this.check(req.headers['user-agent']);
    if (verdict.allowed) return true;
    req.resume();
    const sdk = this.products.find((p) => p.name === 'svc-monitor-sdk')
      ? SDK_USER_AGENT_EXAMPLE
      : this.products[0]
        ? `${this.products[0].name}/1.0.0`
        : null;
    const how = [sdk ? `send User-Agent: ${sdk}` : null, this.browsers ? 'open it in a web browser' : null].filter(Boolean).join(' or ');
    sendProblem(
      res,
      'svc_forbidden_user_agent',
      `${verdict.reason} on the public read API; ${how}`,
      {},
      {
        allowed_user_agents: this.accepted,
      },
    );
    return false;
  }
}
