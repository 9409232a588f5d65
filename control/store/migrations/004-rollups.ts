/** 4: per-endpoint rollups of outcomes for the public read API (reserved; defined with the public API). */
export default `SELECT 1;`;
