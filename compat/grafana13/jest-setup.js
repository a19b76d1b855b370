// Before every test of the React 19 run: fail at once unless React and
// Grafana's libraries really come from this install (React 19, @grafana/* 13).
'use strict';

const path = require('path');

// React 19's react-dom/server (Grafana 13's UI imports it) makes a
// MessageChannel as it loads; jsdom has none. This one delivers each message
// on a timer, which is all React's scheduler needs (Node's own would keep
// jest's workers alive).
if (typeof window.MessageChannel === 'undefined') {
  class Port {
    constructor() {
      this.onmessage = null;
      this.other = null;
    }
    postMessage(data) {
      setTimeout(() => this.other.onmessage?.({ data }), 0);
    }
    start() {}
    close() {}
  }
  class MessageChannel {
    constructor() {
      this.port1 = new Port();
      this.port2 = new Port();
      this.port1.other = this.port2;
      this.port2.other = this.port1;
    }
  }
  Object.defineProperty(window, 'MessageChannel', { writable: true, configurable: true, value: MessageChannel });
}

const MODULES = path.join(__dirname, 'node_modules') + path.sep;
// Resolved as the plugin's sources import them (from src/), not from here.
const SRC = path.resolve(__dirname, '../../src');
const fromSrc = (name) => require.resolve(name, { paths: [SRC] });

for (const name of ['react', 'react-dom', '@grafana/data', '@grafana/ui', '@grafana/runtime', '@testing-library/react']) {
  const file = fromSrc(name);
  if (!file.startsWith(MODULES)) {
    throw new Error(`the React 19 run resolved ${name} (imported from src/) to ${file}, not under ${MODULES}`);
  }
}
const React = require(fromSrc('react'));
const ReactDOM = require(fromSrc('react-dom'));
if (!React.version.startsWith('19.') || !ReactDOM.version.startsWith('19.')) {
  throw new Error(`the React 19 run got React ${React.version} and react-dom ${ReactDOM.version}`);
}
