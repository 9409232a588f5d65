/**
 * `npm run openapi`: write every document to `docs/openapi/<name>.json`. A test fails when a
 * committed file differs from what this would write.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DOCUMENT_NAMES, documentFile, renderDocument } from './index';

export function writeDocuments(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return DOCUMENT_NAMES.map((name) => {
    const path = join(dir, documentFile(name));
    writeFileSync(path, renderDocument(name));
    return path;
  });
}

if (require.main === module) {
  for (const path of writeDocuments(resolve(process.argv[2] ?? 'docs/openapi'))) process.stdout.write(`wrote ${path}\n`);
}
