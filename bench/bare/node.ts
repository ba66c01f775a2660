// The bare node:http baseline (no framework): bench/bare/answers.ts behind a hand-written
// dispatch. Environment: PORT, and answers.ts's. Prints "listening <port>" when ready.
import http from 'node:http';
import * as answers from './answers';

async function route(req: http.IncomingMessage): Promise<answers.Answer> {
  if (req.method !== 'GET') return [405, { code: 'method_not_allowed' }];
  const url = new URL(req.url ?? '/', 'http://bare');
  const auth = req.headers.authorization;
  switch (url.pathname) {
    case '/v1/ping':
      return answers.ping();
    case '/v1/auth/me':
      return answers.me(auth);
    case '/v1/orgs':
      return answers.listOrgs(auth);
    case '/ops/audit':
      return answers.listAudit(auth);
  }
  const parts = url.pathname.split('/'); // ['', 'v1', 'orgs', orgId, 'projects'?]
  if (parts[1] !== 'v1' || parts[2] !== 'orgs' || !parts[3] || parts.length > 5) return [404, { code: 'not_found' }];
  if (parts.length === 4) return answers.getOrg(auth, parts[3]);
  if (parts[4] !== 'projects') return [404, { code: 'not_found' }];
  return answers.listProjects(auth, parts[3], url.searchParams.get('cursor') ?? undefined);
}

const server = http.createServer((req, res) => {
  route(req).then(
    ([status, body]) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    },
    (err) => {
      console.error(err);
      res.writeHead(500).end();
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
process.on('SIGTERM', () => server.close(() => void Promise.resolve(answers.closePool()).finally(() => process.exit(0))));
