// Jest: create-plugin's settings (.config/jest.config.js) and ours.
'use strict';

// The same results whatever the machine's time zone.
process.env.TZ = 'UTC';

module.exports = {
  ...require('./.config/jest.config'),
  // Grafana's UI components render slowly on a small shared machine.
  testTimeout: 30000,
};
