// The bare Express 5 baseline: bench/bare/answers.ts behind Express routes with default
// settings (its router, its req/res, res.json): what our stack costs before any of our code runs,
// the ceiling of issue 26. Environment: PORT, and answers.ts's. Prints "listening <port>" when ready.
import express, { type Response } from 'express';
import * as answers from './answers';

const app = express();
const send = (res: Response, [status, body]: answers.Answer) => res.status(status).json(body);
app.get('/v1/ping', (_req, res) => send(res, answers.ping()));
app.get('/v1/auth/me', async (req, res) => send(res, await answers.me(req.headers.authorization)));
app.get('/v1/orgs', async (req, res) => send(res, await answers.listOrgs(req.headers.authorization)));
app.get('/v1/orgs/:orgId', async (req, res) => send(res, await answers.getOrg(req.headers.authorization, req.params.orgId)));
app.get('/v1/orgs/:orgId/projects', async (req, res) => {
  const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
  send(res, await answers.listProjects(req.headers.authorization, req.params.orgId, cursor));
});
app.post('/v1/auth/login', express.json(), async (req, res) => send(res, await answers.login(req.body, req.ip ?? 'unknown', req.get('user-agent') ?? null)));
app.get('/ops/audit', async (req, res) => send(res, await answers.listAudit(req.headers.authorization)));

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => void Promise.resolve(answers.closePool()).finally(() => process.exit(0))));
