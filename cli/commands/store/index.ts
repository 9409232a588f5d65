/** `svcctl store …`: control's database itself. */
import { lazy, type GroupSpec } from '../../register';

export const store: GroupSpec = {
  name: 'store',
  description: "control's database: move an SQLite install to PostgreSQL",
  commands: [
    {
      name: 'copy',
      description:
        'copy the SQLite store of the data dir (--data-dir) into an empty PostgreSQL database, then verify the copy; control must be stopped',
      options: [
        {
          flags: '--to <url>',
          description: 'the target: postgres://USER:PASSWORD@HOST:PORT/DATABASE, holding no svc table',
          required: true,
        },
        { flags: '--json', description: 'print the tables and rows copied and the verification as one JSON object' },
      ],
      action: async (o, ctx) => {
        const config = ctx.settings({});
        const { run } = lazy<typeof import('./copy.js')>(__dirname, 'copy');
        return run({ dataDir: config.dataDir, to: o.to as string, json: o.json === true }, { out: ctx.out() });
      },
    },
  ],
};
