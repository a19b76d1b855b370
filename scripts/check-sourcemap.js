// Checks dist/module.js.map the way Grafana's plugin validator does before a
// plugin is published: every source of ours in the map, named
// webpack://<plugin id>/<path>, is read from src/<path> and its text must be
// the map's sourcesContent exactly. Sources from node_modules and webpack's
// own runtime are skipped, as the validator skips them; at least module.ts
// must be there. Run after `npm run build`: node scripts/check-sourcemap.js
'use strict';

const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const pluginId = require(path.join(root, 'plugin.json')).id;
const mapFile = path.join(root, 'dist', 'module.js.map');

function fail(msg) {
  console.error(`check-sourcemap: ${msg}`);
  process.exit(1);
}

if (!fs.existsSync(mapFile)) {
  fail(`${path.relative(root, mapFile)} is missing: run npm run build (production) first`);
}
const map = JSON.parse(fs.readFileSync(mapFile, 'utf8'));
if (!Array.isArray(map.sources) || !Array.isArray(map.sourcesContent) || map.sources.length !== map.sourcesContent.length) {
  fail('the map must have sources and sourcesContent of the same length');
}
const prefix = `webpack://${pluginId}/`;
const problems = [];
const checked = [];
map.sources.forEach((source, i) => {
  if (!source.startsWith(prefix)) {
    problems.push(`${source}: not under ${prefix}`);
    return;
  }
  const rel = source.slice(prefix.length).replace(/\?.*$/, '');
  if (rel.startsWith('webpack/') || rel.startsWith('external ') || /(^|\/)node_modules\//.test(rel)) {
    return;
  }
  const file = path.join(root, 'src', rel);
  if (!fs.existsSync(file)) {
    problems.push(`${source}: no file ${path.relative(root, file)}`);
  } else if (fs.readFileSync(file, 'utf8') !== map.sourcesContent[i]) {
    problems.push(`${source}: sourcesContent differs from ${path.relative(root, file)}`);
  } else {
    checked.push(rel);
  }
});
if (!checked.includes('./module.ts')) {
  problems.push('./module.ts is not among the sources');
}
if (problems.length > 0) {
  fail(`${problems.length} source(s) do not match src/:\n  ${problems.join('\n  ')}`);
}
console.log(`check-sourcemap: ${checked.length} sources match src/ (${prefix})`);
