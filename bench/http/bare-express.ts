// A bare Express 5 app answering the same ping as GET /v1/ping (default settings, one route):
// the ceiling our middleware chain is measured against. Prints "listening <port>" when ready.
import express from 'express';

const app = express();
app.get('/v1/ping', (_req, res) => {
  res.json({ pong: true, time: new Date().toISOString() });
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
