// Grafana's Icon draws its SVG with react-inlinesvg, which fetches the file
// (public/img/icons/...) and sets state when it arrives: outside act() in a
// test, and nothing is served under jest. This stand-in draws an empty SVG at
// once, named (data-testid) after the file, as create-plugin's mock does.
'use strict';

const React = require('react');

function InlineSVG({ src }) {
  const name = String(src ?? '').replace(/^(.*\/)?([^/]+)\.svg$/, '$2');
  return React.createElement('svg', { xmlns: 'http://www.w3.org/2000/svg', 'data-testid': name, viewBox: '0 0 24 24' });
}

module.exports = InlineSVG;
module.exports.default = InlineSVG;
module.exports.cacheStore = Object.create(null);
