// The packages under node_modules that ship only ES modules, which jest must
// transform like our own sources (create-plugin keeps the same list for
// Grafana's UI and its dependencies).
'use strict';

const grafanaESModules = [
  '@grafana/schema',
  '@wojtekmaj/date-utils',
  'd3',
  'd3-color',
  'd3-force',
  'd3-interpolate',
  'd3-scale-chromatic',
  'get-user-locale',
  'marked',
  'memoize',
  'mimic-function',
  'ol',
  'react-calendar',
  'react-colorful',
  'rxjs',
  'uuid',
];

/** A transformIgnorePatterns entry that ignores node_modules except the named packages. */
const nodeModulesToTransform = (names) => `node_modules/(?!.*(${names.join('|')})/.*)`;

module.exports = { grafanaESModules, nodeModulesToTransform };
