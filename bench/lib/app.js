'use strict';
/**
 * Which build the bench runs. `npm run bench` builds `dist/` first; the driver then copies it
 * into its work dir and runs every svc process (and its own store access) from that copy, so a
 * rebuild of `dist/` while the bench runs cannot mix two builds in one run.
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
let dist = path.join(ROOT, 'dist');

/** Copy `<repo>/dist` to `<workDir>/app/dist` (with node_modules linked) and use that copy. */
function snapshotDist(workDir) {
  const app = path.join(workDir, 'app');
  fs.mkdirSync(app, { recursive: true });
  fs.cpSync(path.join(ROOT, 'dist'), path.join(app, 'dist'), { recursive: true });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  dist = path.join(app, 'dist');
  return dist;
}

function distDir() {
  return dist;
}

module.exports = { ROOT, snapshotDist, distDir };
