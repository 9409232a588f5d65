/**
 * 18: the agent's own account (`{api_url}/api/v1/account`, `/api/v1/account/calls`).
 *
 * - `outcomes_by_key`: one key's calls by start time, newest first by keyset (started_at,
 *   call_id), so a key's window counts and its call pages read that key's index entries only.
 *   Calls without a key (the beta gate off) are left out: nobody can read them by key.
 */
export default `
  CREATE INDEX outcomes_by_key ON outcomes (key_id, started_at, call_id) WHERE key_id IS NOT NULL;
`;
