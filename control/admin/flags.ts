/**
 * `/_admin/v1/flags`: every change writes the flag and a changelog entry in one transaction
 * (the spec: flag changes are announced in the changelog).
 */
import {
  FLAG_NAMES,
  SetFlagRequest,
  normaliseFlagName,
  type FlagChange,
  type FlagList,
  type FlagName,
  type FlagView,
} from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import { AlreadyDone, mutateUnlessDone } from '../mutation';

function flagName(raw: string): FlagName {
  const name = normaliseFlagName(raw);
  if (name === null) {
    throw new SvcError('svc_not_found', `unknown flag ${raw}; known flags: ${FLAG_NAMES.join(', ')}`, {
      extra: { known_flags: [...FLAG_NAMES] },
    });
  }
  return name;
}

export function registerFlagRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/flags', async ({ res }) => {
    const list = await ctx.store.read(async (tx) => ({ flags: await tx.flags.list(), version: await tx.version() }));
    sendJson(res, 200, list satisfies FlagList);
  });

  router.get('/_admin/v1/flags/:name', async ({ res, params }) => {
    sendJson(res, 200, (await ctx.store.flags.get(flagName(params.name!))) satisfies FlagView | undefined);
  });

  router.put('/_admin/v1/flags/:name', async ({ req, res, params, actor, tokenId }) => {
    const name = flagName(params.name!);
    const input = parseBody(SetFlagRequest, await readJson(req));
    // The flag and the version it holds at, read in one transaction: another change in between
    // would otherwise pair this value with a later version.
    const unchanged = async () => {
      const { flag, version } = await ctx.store.read(async (tx) => ({ flag: (await tx.flags.get(name))!, version: await tx.version() }));
      sendJson(res, 200, { ...flag, version, changed: false, changelog_id: null } satisfies FlagChange);
    };
    if ((await ctx.store.flags.get(name))!.value === input.value) return unchanged();
    const now = ctx.now();
    const text = `${name} turned ${input.value ? 'on' : 'off'}${input.note ? `: ${input.note}` : ''}`;
    const made = await mutateUnlessDone(
      ctx.store,
      { actor, tokenId, now },
      {
        action: 'flags.set',
        target: name,
        detail: { value: input.value, note: input.note ?? null },
        changes: [{ kind: 'flags', entity: '*' }],
      },
      async (tx) => {
        // Set to this value meanwhile, through this control or another on the database.
        if ((await tx.flags.get(name))!.value === input.value) throw new AlreadyDone();
        await tx.flags.set(name, input.value, now, actor, input.note ?? null);
        const changelogId = await tx.changelog.add({ at: now, kind: 'flag', text, flag: name, value: input.value, author: actor });
        // The flag as this change left it: read after the commit, another control's change to it could be in already.
        return { flag: (await tx.flags.get(name))!, changelogId };
      },
    );
    if (made === null) return unchanged();
    const { result, version } = made;
    sendJson(res, 200, { ...result.flag, version, changed: true, changelog_id: result.changelogId } satisfies FlagChange);
  });
}
