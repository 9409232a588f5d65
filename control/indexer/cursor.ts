/** The pages' name for `../activity-cursor.ts`, until they import it from there. */
export * from '../activity-cursor';
