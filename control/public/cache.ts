/** The pages' name for `../http/cache.ts`, until they import it from there. */
export * from '../http/cache';
