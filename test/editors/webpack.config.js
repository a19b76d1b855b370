// Builds the editors' host page into test/editors/dist: index.html and one
// script with everything in it (React 18, the real @grafana/ui, @grafana/data
// and @grafana/runtime from node_modules, and the plugin's editors from src/),
// no externals and no chunks. `npm run build:editors` runs it; the Playwright
// specs beside it open the page.
'use strict';

const path = require('path');
const { Compilation, optimize, sources } = require('webpack');

const root = path.resolve(__dirname, '../..');

const INDEX_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Jobsight editors</title>
    <link rel="icon" href="data:," />
    <style>
      /* Grafana's app shell sets this in its own base stylesheet, which is
         not part of @grafana/ui 10: without it inputs overflow their boxes. */
      html { box-sizing: border-box; }
      *, *::before, *::after { box-sizing: inherit; }
    </style>
  </head>
  <body>
    <div id="root"></div>
    <script src="editors.js"></script>
  </body>
</html>
`;

/** Emits index.html beside the script. */
class IndexHtml {
  apply(compiler) {
    compiler.hooks.thisCompilation.tap('IndexHtml', (compilation) => {
      compilation.hooks.processAssets.tap(
        { name: 'IndexHtml', stage: Compilation.PROCESS_ASSETS_STAGE_ADDITIONAL },
        () => compilation.emitAsset('index.html', new sources.RawSource(INDEX_HTML))
      );
    });
  }
}

module.exports = {
  // Production for tree shaking (@grafana/ui is large), but not minified:
  // faster to build, and readable when a spec fails.
  mode: 'production',
  context: root,
  entry: path.resolve(__dirname, 'page/main.tsx'),
  devtool: false,
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: 'editors.js',
    clean: true,
  },
  resolve: { extensions: ['.tsx', '.ts', '.js', '.mjs'] },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: {
          loader: 'ts-loader',
          options: {
            transpileOnly: true,
            configFile: path.join(root, 'tsconfig.json'),
            compilerOptions: { module: 'esnext', sourceMap: false },
          },
        },
      },
      // Some ES-module packages import without file extensions.
      { test: /\.m?js$/, resolve: { fullySpecified: false } },
    ],
  },
  optimization: { minimize: false },
  plugins: [new IndexHtml(), new optimize.LimitChunkCountPlugin({ maxChunks: 1 })],
  performance: { hints: false },
  stats: 'errors-warnings',
};
