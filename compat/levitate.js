// Checks with Grafana's levitate that what the plugin uses of @grafana/data,
// @grafana/ui and @grafana/runtime (everything src/module.ts reaches) exists,
// with a compatible signature, in each Grafana line the plugin claims
// (plugin.json: grafanaDependency): the oldest claimed release, 11.0.0, and
// the newest release of 11, 12 and 13. levitate compares the installed
// packages (the main install, @grafana/* 12) with each target, which it
// fetches from the npm registry. Any incompatibility fails the run, after
// every target was checked.
//
// Usage: npm run levitate [-- 13.2.3 ...]   (targets as arguments override the list)
'use strict';

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
// The oldest release plugin.json claims, and the newest of each line.
const TARGETS = ['11.0.0', '11.6.16', '12.4.10', '13.2.3'];
const PACKAGES = ['@grafana/data', '@grafana/ui', '@grafana/runtime'];

const bin = path.join(ROOT, 'node_modules', '@grafana', 'levitate', 'dist', 'bin.js');
if (!fs.existsSync(bin)) {
  console.error(`levitate: ${path.relative(ROOT, bin)} is missing: run npm ci`);
  process.exit(2);
}
const targets = process.argv.length > 2 ? process.argv.slice(2) : TARGETS;
const results = [];
for (const version of targets) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) {
    console.error(`levitate: ${JSON.stringify(version)} is not a release (x.y.z)`);
    process.exit(2);
  }
  const target = PACKAGES.map((p) => `${p}@${version}`).join(',');
  console.log(`\n=== levitate is-compatible --path src/module.ts --target ${target}`);
  const start = Date.now();
  const r = spawnSync(process.execPath, [bin, 'is-compatible', '--path', 'src/module.ts', '--target', target], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const secs = Math.round((Date.now() - start) / 1000);
  results.push({ version, ok: r.status === 0, secs, status: r.status ?? r.signal });
}
console.log('\nlevitate summary (src/module.ts against @grafana/data, ui, runtime):');
for (const r of results) {
  console.log(`  ${r.version.padEnd(8)} ${r.ok ? 'compatible' : `NOT compatible (exit ${r.status})`}  ${r.secs}s`);
}
process.exit(results.every((r) => r.ok) ? 0 : 1);
