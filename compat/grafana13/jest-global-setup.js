// Says once, before the React 19 run, which React and Grafana libraries it
// uses and where from; fails when this install is missing.
'use strict';

const fs = require('fs');
const path = require('path');

module.exports = async () => {
  const modules = path.join(__dirname, 'node_modules');
  const version = (name) => {
    const file = path.join(modules, name, 'package.json');
    if (!fs.existsSync(file)) {
      throw new Error(`${path.relative(process.cwd(), file)} is missing: run npm ci --prefix compat/grafana13`);
    }
    return JSON.parse(fs.readFileSync(file, 'utf8')).version;
  };
  const names = ['react', 'react-dom', '@grafana/data', '@grafana/ui', '@grafana/runtime', '@testing-library/react'];
  const found = names.map((n) => `${n} ${version(n)}`).join(', ');
  console.log(`\nReact 19 run (compat/grafana13/node_modules): ${found}`);
};
