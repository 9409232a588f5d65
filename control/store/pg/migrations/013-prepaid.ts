/** Prepaid billing: SQLite's migration 22 (`../../migrations/022-prepaid.ts`), which says what each column holds. */
export default `
  ALTER TABLE endpoints ADD COLUMN billing TEXT COLLATE "C" NOT NULL DEFAULT 'postpaid' CHECK (billing IN ('prepaid', 'postpaid'));
`;
