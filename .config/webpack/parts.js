// The parts of the plugin's build that the build itself
// (.config/webpack/webpack.config.ts) and the editors' host page
// (test/editors/webpack.config.js) share: the libraries Grafana provides,
// the swc-loader rule, and the plugin's files beside module.js.
//
// Source maps: webpack names each source webpack://<plugin id>/<path from
// src/>, because src/ is the context, and keeps the file's text unchanged in
// sourcesContent. Grafana's plugin validator joins that path to the
// repository's src/ and compares the texts.
'use strict';

const fs = require('fs');
const path = require('path');
const { Compilation, sources } = require('webpack');

const ROOT = path.resolve(__dirname, '../..');
const SOURCE_DIR = path.join(ROOT, 'src');
const DIST_DIR = path.join(ROOT, 'dist');

const pkg = require(path.join(ROOT, 'package.json'));
const pluginJson = require(path.join(ROOT, 'plugin.json'));

// Libraries Grafana provides to plugins at run time; never bundled.
const EXTERNALS = [
  'react',
  'react/jsx-runtime',
  'react-dom',
  '@emotion/css',
  '@emotion/react',
  'lodash',
  'moment',
  'rxjs',
  'rxjs/operators',
  /^@grafana\/ui/i,
  /^@grafana\/runtime/i,
  /^@grafana\/data/i,
];

/** Replaces what create-plugin's templates replace in plugin.json and README.md. */
function fillIn(text) {
  return text
    .replace(/%VERSION%/g, pkg.version)
    .replace(/%TODAY%/g, new Date().toISOString().slice(0, 10))
    .replace(/%PLUGIN_ID%/g, pluginJson.id);
}

/**
 * Emits the files beside module.js: plugin.json and the README filled in,
 * CHANGELOG.md, LICENSE and the files under src/img. A missing one fails the
 * build: the plugin validator wants them all in the archive.
 */
class PluginAssets {
  apply(compiler) {
    compiler.hooks.thisCompilation.tap('PluginAssets', (compilation) => {
      compilation.hooks.processAssets.tap(
        { name: 'PluginAssets', stage: Compilation.PROCESS_ASSETS_STAGE_ADDITIONAL },
        () => {
          const add = (name, file, filled) => {
            const body = fs.readFileSync(file);
            compilation.emitAsset(name, new sources.RawSource(filled ? fillIn(body.toString('utf8')) : body));
            compilation.fileDependencies.add(file);
          };
          add('plugin.json', path.join(ROOT, 'plugin.json'), true);
          add('README.md', path.join(SOURCE_DIR, 'README.md'), true);
          add('CHANGELOG.md', path.join(ROOT, 'CHANGELOG.md'), false);
          add('LICENSE', path.join(ROOT, 'LICENSE'), false);
          const imgDir = path.join(SOURCE_DIR, 'img');
          for (const name of fs.readdirSync(imgDir)) {
            add(`img/${name}`, path.join(imgDir, name), false);
          }
        }
      );
    });
  }
}

/** The swc-loader rule for the TypeScript sources (create-plugin's settings). */
function swcRule(target) {
  return {
    test: /\.[tj]sx?$/,
    exclude: /node_modules/,
    use: {
      loader: 'swc-loader',
      options: {
        jsc: {
          target,
          loose: false,
          parser: { syntax: 'typescript', tsx: true, decorators: false, dynamicImport: true },
          transform: { react: { runtime: 'classic' } },
        },
      },
    },
  };
}

/** The plugin's webpack configuration: production or development. */
function pluginConfig(env = {}) {
  const production = Boolean(env.production);
  return {
    context: SOURCE_DIR,
    mode: production ? 'production' : 'development',
    devtool: production ? 'source-map' : 'eval-source-map',
    entry: { module: './module.ts' },
    externals: EXTERNALS,
    output: {
      path: DIST_DIR,
      filename: '[name].js',
      library: { type: 'amd' },
      publicPath: `public/plugins/${pluginJson.id}/`,
      uniqueName: pluginJson.id,
    },
    resolve: { extensions: ['.ts', '.tsx', '.js', '.jsx'] },
    module: { rules: [swcRule('es2015')] },
    plugins: [new PluginAssets()],
    performance: { hints: false },
  };
}

module.exports = { pluginConfig, swcRule, EXTERNALS, PluginAssets };
