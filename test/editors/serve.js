// Serves the built host page (test/editors/dist) on 127.0.0.1 for the
// Playwright specs: GET and HEAD of files under that folder only.
// Usage: node test/editors/serve.js [port]   (or JOBSIGHT_EDITOR_PORT; 0 picks one)
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');

const dir = path.resolve(__dirname, 'dist');
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
