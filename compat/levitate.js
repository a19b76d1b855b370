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
//
// The answer depends only on what it compares: the sources, the installed
// packages (package-lock.json), this script and the exact target releases.
// A pass of the default targets is remembered under their SHA-256 in
// $JOBSIGHT_CACHE/levitate (~/.cache/jobsight/levitate), and a run on the
// same inputs says so instead of fetching and comparing again
// (LEVITATE_FRESH=1 forces the comparison).
'use strict';

const { spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
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

/** The SHA-256 of every input of the comparison. */
function inputsHash() {
  const h = crypto.createHash('sha256');
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        walk(p);
      } else {
        files.push(p);
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  files.push(path.join(ROOT, 'package-lock.json'), __filename);
  for (const f of files.sort()) {
    h.update(path.relative(ROOT, f)).update('\0').update(fs.readFileSync(f)).update('\0');
  }
  h.update(JSON.stringify({ targets, PACKAGES }));
  return h.digest('hex');
}

const cacheDir = path.join(process.env.JOBSIGHT_CACHE || path.join(os.homedir(), '.cache', 'jobsight'), 'levitate');
const passed = path.join(cacheDir, `${inputsHash()}.passed`);
if (!process.env.LEVITATE_FRESH && fs.existsSync(passed)) {
  console.log(`levitate: these sources, packages and targets (${targets.join(', ')}) passed before:`);
  console.log(fs.readFileSync(passed, 'utf8').trimEnd());
  console.log(`(remembered in ${passed}; LEVITATE_FRESH=1 compares again)`);
  process.exit(0);
}
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
const ok = results.every((r) => r.ok);
if (ok) {
  fs.mkdirSync(cacheDir, { recursive: true });
  const lines = results.map((r) => `  ${r.version.padEnd(8)} compatible  ${r.secs}s`);
  fs.writeFileSync(passed, `checked ${new Date().toISOString()}:\n${lines.join('\n')}\n`);
}
process.exit(ok ? 0 : 1);
