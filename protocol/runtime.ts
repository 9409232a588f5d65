/**
 * What processes of one install tell each other outside HTTP: the file a running control
 * publishes in the data dir (read by `svcctl` and by gateways to find it), and the lines the
 * serve commands and `svcctl up` print once ready (read by `up`, scripts and the demo).
 */
import { z } from 'zod';
import { IsoTime } from './wire';

/** File in the data dir that tells `svcctl` and gateways where a running control listens. */
export const RUNTIME_FILE = 'control.json';

/** Control's listeners. */
export const ControlUrls = z.strictObject({ control: z.string().min(1), api: z.string().min(1), indexer: z.string().min(1) });
export type ControlUrls = z.infer<typeof ControlUrls>;

/** The content of `control.json`, written atomically by control once it listens. */
export const RuntimeInfo = z.strictObject({ pid: z.number().int().min(1), urls: ControlUrls, started_at: IsoTime });
export type RuntimeInfo = z.infer<typeof RuntimeInfo>;

/** The control URL in a `control.json` text, or null for a missing, torn or foreign file. */
export function runtimeControlUrl(text: string | null): string | null {
  if (text === null) return null;
  try {
    const parsed = RuntimeInfo.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.urls.control : null;
  } catch {
    return null;
  }
}

/** The role a serve command runs and the URLs it listens on, once ready. */
export const ReadyLine = z.strictObject({
  role: z.string(),
  pid: z.number().int().min(1),
  urls: z.record(z.string(), z.string()),
  /** control: where its admin token is (a file, or the environment), for up's banner. */
  admin_token: z.string().optional(),
});
export type ReadyLine = z.infer<typeof ReadyLine>;

/** `svcctl serve <role> --json`: one object once ready. */
export const ServeReady = ReadyLine.extend({ status: z.literal('ready') });
export type ServeReady = z.infer<typeof ServeReady>;

/** `svcctl up --json`: one object once every role is ready. */
export const UpReady = z.strictObject({
  status: z.literal('ready'),
  urls: z.record(z.string(), z.string()),
  pids: z.record(z.string(), z.number().int().min(1)),
});
export type UpReady = z.infer<typeof UpReady>;

/**
 * The `svcctl up` / `svcctl serve control` options that put control's listeners on loopback,
 * each on a port the system picks; the ready line then names the URLs. What the demo,
 * `npm run cluster` and the benches start control with.
 */
export const CONTROL_ON_FREE_PORTS = ['--host', '127.0.0.1', '--control-port', '0', '--api-port', '0', '--indexer-port', '0'] as const;
