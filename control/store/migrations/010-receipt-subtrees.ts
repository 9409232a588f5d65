/**
 * 10: the roots of each batch's aligned runs of 64 leaves, stored with its receipt (32 bytes
 * each, in order; `protocol/receipt-tree.ts`). Not part of the published receipt: they let a
 * proof read only the rows of the call's run instead of the whole batch. NULL (receipts
 * written before) means a proof hashes the whole batch, as before.
 */
export default `
  ALTER TABLE receipts ADD COLUMN subtrees BLOB;
`;
