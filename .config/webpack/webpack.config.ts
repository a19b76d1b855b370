// The plugin's build, in the layout @grafana/create-plugin 7 gives its
// projects (.config/webpack/webpack.config.ts, run by webpack-cli through
// ts-node; see .config/README.md). Written for Jobsight, not generated: the
// scaffold's own file expects src/plugin.json, and Jobsight keeps plugin.json
// at the top level. It builds dist/: module.js as an AMD module (what
// Grafana's plugin loader expects) with the libraries Grafana provides as
// externals, its source map, plugin.json (version and date filled in),
// img/, and the catalogue's README.md (src/README.md), CHANGELOG.md and
// LICENSE. It never empties dist/: the backend executables live there too
// (Magefile.go).
//
// Usage: webpack -c .config/webpack/webpack.config.ts --env production|development
import type { Configuration } from 'webpack';

// The parts the editors' host page shares (plain JavaScript, so that its own
// webpack configuration needs no TypeScript loader).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pluginConfig } = require('./parts.js');

type Env = { production?: boolean; development?: boolean };

const config = (env: Env = {}): Configuration => pluginConfig(env);

export default config;
