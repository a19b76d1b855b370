// Jest's resolver for the React 19 run: a bare import (react, @grafana/ui,
// @testing-library/react, ...) made by the plugin's own files (src/, the
// shared setup in .config/, this folder) is resolved from this folder, in
// compat/grafana13/node_modules, and nowhere else: one that would fall
// through to the main install (React 18, @grafana/* 12) fails the run with
// its name. Imports made inside node_modules, relative imports and jest's own
// look-ups are resolved as usual.
'use strict';

const { isBuiltin } = require('module');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const HERE = __dirname;
const MODULES = path.join(HERE, 'node_modules');
const OURS = [path.join(ROOT, 'src'), path.join(ROOT, '.config'), HERE].map((d) => d + path.sep);

function isOurs(basedir) {
  const dir = basedir + path.sep;
  return !dir.includes(`${path.sep}node_modules${path.sep}`) && OURS.some((d) => dir.startsWith(d));
}

module.exports = (request, options) => {
  const bare = !request.startsWith('.') && !path.isAbsolute(request);
  if (!bare || isBuiltin(request) || !isOurs(options.basedir)) {
    return options.defaultResolver(request, options);
  }
  const resolved = options.defaultResolver(request, { ...options, basedir: HERE });
  if (!resolved.startsWith(MODULES + path.sep)) {
    throw new Error(
      `${request} (imported from ${path.relative(ROOT, options.basedir)}) resolved to ${path.relative(ROOT, resolved)}, ` +
        `outside compat/grafana13/node_modules: add it to compat/grafana13/package.json`
    );
  }
  return resolved;
};
