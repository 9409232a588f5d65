/**
 * 22: prepaid billing (docs/money.md, "Prepaid endpoints"). `endpoints.billing` is how the
 * endpoint's calls are paid: `postpaid` (the premium is taken from the account when the call
 * settles, whatever it holds: every endpoint before this migration) or `prepaid` (a gateway
 * admits a keyed call only while the key's account can cover the premium).
 */
export default `
  ALTER TABLE endpoints ADD COLUMN billing TEXT NOT NULL DEFAULT 'postpaid' CHECK (billing IN ('prepaid', 'postpaid'));
`;
