/**
 * HTTP client for control's admin API. Turns problem+json answers into `ApiError` (keeping
 * the stable `code`) and connection failures into one actionable line.
 */
import { ProblemSchema, type Problem } from '../protocol/errors';
import { CliError, EXIT_FAILURE, EXIT_STORE_UNAVAILABLE, EXIT_USAGE } from './exit-codes';

/** The exit code of a command control refused with `problem`: 2 for a bad request, 3 while its database is unreachable, else 1. */
export function exitCodeOf(problem: Problem): number {
  if (problem.code === 'svc_store_unavailable') return EXIT_STORE_UNAVAILABLE;
  return problem.status === 400 ? EXIT_USAGE : EXIT_FAILURE;
}

export class ApiError extends CliError {
  override readonly code = 'SVC_ERR_CLI_API';
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(`${problem.detail} (${problem.code})`, exitCodeOf(problem));
    this.problem = problem;
  }
}

export type FetchLike = typeof fetch;

/** Milliseconds to wait for control before giving up. @default 30000 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export class AdminClient {
  readonly baseUrl: string;
  private readonly token: string | null;
  private readonly fetchImpl: FetchLike;
  private readonly timeoutMs: number;

  constructor(options: { baseUrl: string; token: string | null; fetch?: FetchLike; timeoutMs?: number }) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.fetchImpl = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }
  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('POST', path, body ?? {});
  }
  put<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('PUT', path, body ?? {});
  }
  patch<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('PATCH', path, body ?? {});
  }
  delete<T>(path: string): Promise<T> {
    return this.request<T>('DELETE', path);
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await this.send<T>(method, path, body)).body;
  }

  /** Like {@link request}, with the status of the answer (a money action answers 202 when it waits for a second operator). */
  async send<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    if (this.token === null) {
      throw new CliError('no admin token: set SVC_ADMIN_TOKEN or point --data-dir at the data dir holding admin.token');
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.fetchImpl(this.baseUrl + path, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : 'connection failed';
      throw new CliError(`control not reachable at ${this.baseUrl} (${reason}) — is \`svcctl up\` running?`);
    }
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      throw new CliError(`control at ${this.baseUrl} answered ${res.status} with a body that is not JSON`);
    }
    if (!res.ok) {
      const problem = ProblemSchema.safeParse(parsed);
      if (problem.success) throw new ApiError(problem.data);
      throw new CliError(`control at ${this.baseUrl} answered ${res.status} ${res.statusText}`);
    }
    return { status: res.status, body: parsed as T };
  }
}
