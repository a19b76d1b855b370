// Serves the built host page (test/editors/dist, or the folder beside it that
// JOBSIGHT_EDITOR_DIST names: dist-grafana13 for the React 19 build) on
// 127.0.0.1 for the Playwright specs: GET and HEAD of files under that folder
// only.
// Usage: node test/editors/serve.js [port]   (or JOBSIGHT_EDITOR_PORT; 0 picks one)
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');

const distName = process.env.JOBSIGHT_EDITOR_DIST || 'dist';
if (!/^dist(-[a-z0-9]+)?$/.test(distName)) {
  console.error(`JOBSIGHT_EDITOR_DIST must be dist or dist-<name>, not ${JSON.stringify(distName)}`);
  process.exit(2);
}
const dir = path.resolve(__dirname, distName);
if (!fs.existsSync(path.join(dir, 'index.html'))) {
  console.error(`${dir}/index.html is missing: build the page first (npm run build:editors or build:editors:react19)`);
  process.exit(2);
}
const port = Number(process.argv[2] ?? process.env.JOBSIGHT_EDITOR_PORT ?? 0);

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.css': 'text/css; charset=utf-8',
};

const server = http.createServer((req, res) => {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD' }).end();
    return;
  }
  let name;
  try {
    name = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
  } catch {
    res.writeHead(400).end();
    return;
  }
  if (name.endsWith('/')) {
    name += 'index.html';
  }
  const file = path.join(dir, path.normalize(name));
  if (!file.startsWith(dir + path.sep)) {
    res.writeHead(404).end();
    return;
  }
  fs.readFile(file, (err, body) => {
    if (err) {
      // On stderr, which Playwright shows: a missing file is a page error.
      // Grafana's web fonts are never here (fixtures.ts says why).
      if (!name.startsWith('/public/fonts/')) {
        console.error(`serve.js: 404 ${name}`);
      }
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`not found: ${name}\n`);
      return;
    }
    res.writeHead(200, {
      'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'Content-Length': body.length,
      'Cache-Control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`serving ${dir} on http://127.0.0.1:${server.address().port}/`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
