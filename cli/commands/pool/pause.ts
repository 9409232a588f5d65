/**
 * `svcctl pool pause --note TEXT` and `svcctl pool resume --note TEXT`: an operator pauses the
 * coverage of calls (they go on, uncovered) or resumes it; the note is published in the
 * changelog. Asking for what already holds changes nothing (`changed: false`).
 */
import type { PoolPauseView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

/** What `pool pause` and `pool resume` print for control's answer. */
export function pauseLines(answer: PoolPauseView): string[] {
  if (!answer.changed)
    return [answer.paused ? 'Coverage was already paused; nothing changed.' : 'Coverage was not paused; nothing changed.'];
  return answer.paused
    ? [
        `Coverage paused at ${answer.at}: calls go on uncovered (no premium, no refund) until svcctl pool resume.`,
        `Published in the changelog: Coverage paused: ${answer.note}`,
      ]
    : [`Coverage resumed at ${answer.at}.`, `Published in the changelog: Coverage resumed: ${answer.note}`];
}

/** Pause (`paused` true) or resume coverage, and print control's answer. */
export async function sendPause(paused: boolean, opts: { note: string; json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.post<PoolPauseView>(`/_admin/v1/pool/${paused ? 'pause' : 'resume'}`, { note: opts.note });
  if (opts.json) deps.out.json(answer);
  else for (const line of pauseLines(answer)) deps.out.line(line);
  return EXIT_OK;
}

export const run = (opts: { note: string; json?: boolean }, deps: Deps): Promise<number> => sendPause(true, opts, deps);
