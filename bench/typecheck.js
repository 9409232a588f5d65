#!/usr/bin/env node
'use strict';
/**
 * `npm run typecheck:bench` (part of `npm run lint`): type-check bench/'s JavaScript
 * (`bench/tsconfig.json`, `checkJs`) against the TypeScript sources of the modules it loads
 * (`lib/internals.js`). Only bench/'s own files are checked: the sources are read for their
 * types, and `tsc -p tsconfig.json` checks them, so this costs seconds rather than another full
 * check of the product.
 */
const path = require('node:path');
const ts = require('typescript');

const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) };
const config = ts.getParsedCommandLineOfConfigFile(path.join(__dirname, 'tsconfig.json'), {}, host);
if (config === undefined) throw new Error('bench/tsconfig.json cannot be read');
const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
const diagnostics = [...config.errors, ...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
for (const file of config.fileNames) {
  const source = program.getSourceFile(file);
  if (source === undefined) throw new Error(`${file}: not in the program`);
  diagnostics.push(...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source));
}
if (diagnostics.length > 0) fail(diagnostics);

/** @param {readonly import('typescript').Diagnostic[]} list */
function fail(list) {
  const format = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => process.cwd(), getNewLine: () => '\n' };
  process.stderr.write(ts.formatDiagnosticsWithColorAndContext(list, format));
  process.stderr.write(`\nbench/: ${list.length} type error${list.length === 1 ? '' : 's'}\n`);
  process.exit(1);
}
