// A bare node:http server answering the same ping as GET /v1/ping. Prints "listening <port>" when ready.
import http from 'node:http';

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/v1/ping') {
    const body = JSON.stringify({ pong: true, time: new Date().toISOString() });
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  } else {
    res.writeHead(404).end();
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
