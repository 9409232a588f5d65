/**
 * What the documents of control's two public listeners, the public API ({api_url}) and the
 * indexer ({indexer_url}), share: the `health` tag, `/openapi.json` and `/favicon.ico` as reads
 * anyone may make, and the request rules closing each description.
 */
import type { ErrorCode } from '../errors';
import { buildDocument } from './build';
import { IF_NONE_MATCH, OpenApiDocument, REQUEST_RULES, cachedJson } from './common';
import type { DocumentSpec, JsonObject, Named, Operation } from './operation';

/** The tag of `/health` and `/openapi.json`. */
const HEALTH_TAG = { name: 'health', description: 'Liveness and this document' };

/** `/openapi.json`: the listener's own document (`title` names it), a cached read. */
export function openApiRead(title: string, errors: readonly ErrorCode[]): Operation {
  return {
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This document',
    tag: HEALTH_TAG.name,
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedJson(`The OpenAPI 3.1 document of ${title}`, { OpenApiDocument }),
    errors,
  };
}

/** `/favicon.ico`: 204, so that a browser visiting a page logs no failed request. */
export function faviconRead(errors: readonly ErrorCode[]): Operation {
  return {
    method: 'get',
    path: '/favicon.ico',
    operationId: 'getFavicon',
    summary: 'No icon',
    description: 'Browsers ask every origin for one; 204 (cached for a day) says there is none, so visiting a page logs no failed request.',
    tag: 'pages',
    security: ['none'],
    answers: [{ status: 204, description: 'No icon', requiredHeaders: ['Cache-Control'] }],
    errors,
  };
}

/** The listener's document: `health` its first tag, the request rules of control's listeners ending its description. */
export function publicListenerDocument(spec: DocumentSpec, shared: Named): JsonObject {
  return buildDocument({ ...spec, description: spec.description + REQUEST_RULES, tags: [HEALTH_TAG, ...spec.tags] }, shared);
}
