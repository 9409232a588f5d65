/**
 * The OpenAPI 3.1 documents of svc, one per listener, generated from the zod schemas of
 * `protocol/` (never written by hand). `docs/openapi/<name>.json` holds each as
 * {@link renderDocument} writes it (`npm run openapi`); control serves the same bytes at
 * `{api_url}/openapi.json`, `{indexer_url}/openapi.json` and `{control}/_admin/v1/openapi.json`.
 */
import { adminDocument } from './admin';
import type { JsonObject } from './operation';
import { gatewayDocument } from './gateway';
import { indexerDocument } from './indexer';
import { publicDocument } from './public';

export const DOCUMENT_NAMES = ['public', 'indexer', 'admin', 'gateway'] as const;
export type DocumentName = (typeof DOCUMENT_NAMES)[number];

const BUILDERS: Readonly<Record<DocumentName, () => JsonObject>> = {
  public: publicDocument,
  indexer: indexerDocument,
  admin: adminDocument,
  gateway: gatewayDocument,
};

/** The file under `docs/openapi/` that holds a document. */
export const documentFile = (name: DocumentName): string => `${name}.json`;

/** A document as an object (built anew on each call). */
export function buildNamedDocument(name: DocumentName): JsonObject {
  return BUILDERS[name]();
}

const rendered = new Map<DocumentName, string>();

/** A document's exact bytes: two-space JSON and a final newline. Built once per process. */
export function renderDocument(name: DocumentName): string {
  let text = rendered.get(name);
  if (text === undefined) {
    text = JSON.stringify(buildNamedDocument(name), null, 2) + '\n';
    rendered.set(name, text);
  }
  return text;
}
