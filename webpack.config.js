// Builds the plugin frontend into dist/: module.js as an AMD module (the
// format Grafana's plugin loader expects) with Grafana's shared libraries as
// externals, plus plugin.json (from the top level, version and date filled
// in) and img/. It never empties dist/: the backend executables live there
// too (see Magefile.go).
'use strict';

const fs = require('fs');
const path = require('path');
const { Compilation, sources } = require('webpack');

const pkg = require('./package.json');
const pluginJson = require('./plugin.json');

// Libraries Grafana provides to plugins at run time; never bundled.
const EXTERNALS = [
  'react',
  'react-dom',
  '@grafana/data',
  '@grafana/ui',
  '@grafana/runtime',
  '@emotion/css',
  '@emotion/react',
  'lodash',
  'moment',
  'rxjs',
  'rxjs/operators',
];

/** Emits plugin.json and the files under src/img into the build output. */
class PluginAssets {
  apply(compiler) {
    compiler.hooks.thisCompilation.tap('PluginAssets', (compilation) => {
      compilation.hooks.processAssets.tap(
        { name: 'PluginAssets', stage: Compilation.PROCESS_ASSETS_STAGE_ADDITIONAL },
        () => {
          const pluginJsonPath = path.resolve(__dirname, 'plugin.json');
          const text = fs
            .readFileSync(pluginJsonPath, 'utf8')
            .replace('%VERSION%', pkg.version)
            .replace('%TODAY%', new Date().toISOString().slice(0, 10));
          compilation.emitAsset('plugin.json', new sources.RawSource(text));
          compilation.fileDependencies.add(pluginJsonPath);

          const imgDir = path.resolve(__dirname, 'src/img');
          for (const name of fs.readdirSync(imgDir)) {
            const file = path.join(imgDir, name);
            compilation.emitAsset(`img/${name}`, new sources.RawSource(fs.readFileSync(file)));
            compilation.fileDependencies.add(file);
          }
        }
      );
    });
  }
}

module.exports = (_env, argv) => ({
  mode: argv.mode === 'development' ? 'development' : 'production',
  context: __dirname,
  entry: './src/module.ts',
  devtool: 'source-map',
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: 'module.js',
    library: { type: 'amd' },
    publicPath: `public/plugins/${pluginJson.id}/`,
    uniqueName: pluginJson.id,
  },
  externals: EXTERNALS,
  resolve: { extensions: ['.ts', '.tsx', '.js'] },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: { loader: 'ts-loader', options: { transpileOnly: true } },
      },
    ],
  },
  plugins: [new PluginAssets()],
  performance: { hints: false },
});
