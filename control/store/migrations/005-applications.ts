/** 5: access applications (reserved; defined with the application form). */
export default `SELECT 1;`;
