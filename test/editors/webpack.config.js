// Builds the editors' host page into test/editors/dist: index.html and one
// script with everything in it (React, the real @grafana/ui, @grafana/data
// and @grafana/runtime, and the plugin's editors from src/), no externals and
// no chunks. `npm run build:editors` runs it; the Playwright specs beside it
// open the page.
//
// With --env compat=grafana13 (`npm run build:editors:react19`) the same page
// is built into test/editors/dist-grafana13 against the separate install in
// compat/grafana13 (React 19, @grafana/* 13): every bare import of the page
// and of src/ is resolved there and only there, so nothing of the main
// install (React 18, @grafana/* 12) can slip in.
'use strict';

const fs = require('fs');
const path = require('path');
const { Compilation, optimize, sources } = require('webpack');

const { swcRule } = require('../../.config/webpack/parts.js');

const root = path.resolve(__dirname, '../..');

const INDEX_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Jobsight editors</title>
    <link rel="icon" href="data:," />
    <style>
      /* Grafana's app shell sets this in its own base stylesheet, which is
         not part of @grafana/ui: without it inputs overflow their boxes. */
      html { box-sizing: border-box; }
      *, *::before, *::after { box-sizing: inherit; }
    </style>
  </head>
  <body>
    <div id="root"></div>
    <!-- Room below the last editor, so that any field can be scrolled to the
         middle of the window with its select menu below it. -->
    <div style="height: 60vh"></div>
    <script src="editors.js"></script>
  </body>
</html>
`;

// A stand-in for Grafana's spinner icon, which a Grafana server serves but
// @grafana/ui's package does not ship (selects show it while loading).
const SPINNER_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><circle cx="12" cy="12" r="9" fill="none" stroke="currentColor" stroke-width="2" stroke-dasharray="42 15"/></svg>\n';

/** The files under dir, as paths relative to it. */
function filesUnder(dir, rel = '') {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const name = path.join(rel, e.name);
    return e.isDirectory() ? filesUnder(dir, name) : [name];
  });
}

/**
 * Emits index.html beside the script, and Grafana's icons where @grafana/ui
 * fetches them (public/build/img/icons/, as a Grafana server serves them)
 * from the @grafana/ui the page is built with.
 */
class PageAssets {
  constructor(grafanaUi) {
    this.icons = path.join(grafanaUi, 'dist', 'public', 'img', 'icons');
  }
  apply(compiler) {
    compiler.hooks.thisCompilation.tap('PageAssets', (compilation) => {
      compilation.hooks.processAssets.tap(
        { name: 'PageAssets', stage: Compilation.PROCESS_ASSETS_STAGE_ADDITIONAL },
        () => {
          compilation.emitAsset('index.html', new sources.RawSource(INDEX_HTML));
          const icons = filesUnder(this.icons);
          for (const rel of icons) {
            const body = fs.readFileSync(path.join(this.icons, rel));
            compilation.emitAsset(`public/build/img/icons/${rel}`, new sources.RawSource(body));
          }
          if (!icons.includes(path.join('unicons', 'spinner.svg'))) {
            compilation.emitAsset('public/build/img/icons/unicons/spinner.svg', new sources.RawSource(SPINNER_SVG));
          }
        }
      );
    });
  }
}

module.exports = (env = {}) => {
  const compat = env.compat;
  let resolveOurs = {};
  let modulesDir = path.join(root, 'node_modules');
  if (compat) {
    const modules = path.join(root, 'compat', compat, 'node_modules');
    if (!fs.existsSync(path.join(modules, 'react', 'package.json'))) {
      throw new Error(`${path.relative(root, modules)} is missing: run npm ci --prefix compat/${compat}`);
    }
    resolveOurs = { resolve: { modules: [modules] } };
    modulesDir = modules;
  }
  return {
    // Production for tree shaking (@grafana/ui is large), but not minified:
    // faster to build, and readable when a spec fails.
    mode: 'production',
    context: root,
    entry: path.resolve(__dirname, 'page/main.tsx'),
    devtool: false,
    output: {
      path: path.resolve(__dirname, compat ? `dist-${compat}` : 'dist'),
      filename: 'editors.js',
      clean: true,
    },
    resolve: { extensions: ['.tsx', '.ts', '.js', '.mjs'] },
    module: {
      rules: [
        // The page and the plugin's sources (not node_modules): compiled as
        // the plugin build compiles them, and, for a compat build, their
        // imports resolved in that install.
        { ...swcRule('es2020'), include: [path.join(root, 'src'), path.join(__dirname, 'page')], ...resolveOurs },
        // Some ES-module packages import without file extensions.
        { test: /\.m?js$/, resolve: { fullySpecified: false } },
      ],
    },
    optimization: { minimize: false },
    plugins: [
      new PageAssets(path.join(modulesDir, '@grafana', 'ui')),
      new optimize.LimitChunkCountPlugin({ maxChunks: 1 }),
    ],
    performance: { hints: false },
    stats: 'errors-warnings',
  };
};
