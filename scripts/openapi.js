#!/usr/bin/env node
'use strict';
/**
 * `npm run openapi`: write every OpenAPI document (built in `protocol/openapi/`, read from the
 * build in `dist/`) to `<dir>/<name>.json`, `docs/openapi/` by default. A test fails when a
 * committed file differs from what this would write. It lives outside `protocol/`, which holds
 * no code that writes files.
 */
const { mkdirSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { DOCUMENT_NAMES, documentFile, renderDocument } = require('../dist/protocol/openapi/index.js');

const dir = resolve(process.argv[2] ?? 'docs/openapi');
mkdirSync(dir, { recursive: true });
for (const name of DOCUMENT_NAMES) {
  const path = join(dir, documentFile(name));
  writeFileSync(path, renderDocument(name));
  process.stdout.write(`wrote ${path}\n`);
}
