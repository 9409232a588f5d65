/** The pages' name for `../ids.ts`, until they import it from there. */
export * from '../ids';
