// An error no command expected still ends svcctl with exit 1 and one line on stderr, which
// names the error's code when it has one (ours, `SVC_ERR_*`, or Node's), so a script or a
// report can match it.
import t from 'tap';
import { main } from '../../cli/index';
import { memoryOutput } from '../../cli/output';
import { EXIT_FAILURE } from '../../cli/exit-codes';

async function failWith(err: unknown) {
  const out = memoryOutput();
  const code = await main(['status'], {
    out,
    deps: () => {
      throw err;
    },
  });
  return { code, stderr: out.stderr };
}

t.test('a coded error: its code in the line', async (t) => {
  const err = Object.assign(new Error('the store would not open'), { code: 'SVC_ERR_STORE_OPEN' });
  t.same(await failWith(err), { code: EXIT_FAILURE, stderr: ['svcctl: unexpected error (SVC_ERR_STORE_OPEN): the store would not open'] });
});

t.test("Node's codes too", async (t) => {
  const err = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  t.same((await failWith(err)).stderr, ['svcctl: unexpected error (ECONNRESET): read ECONNRESET']);
});

t.test('without a code, or not an Error at all', async (t) => {
  t.same(await failWith(new Error('plain')), { code: EXIT_FAILURE, stderr: ['svcctl: unexpected error: plain'] });
  t.same((await failWith(Object.assign(new Error('numeric'), { code: 42 }))).stderr, ['svcctl: unexpected error: numeric']);
  t.same((await failWith('a string')).stderr, ['svcctl: unexpected error: a string']);
  t.same((await failWith(null)).stderr, ['svcctl: unexpected error: null']);
});
