// What survives each scavenge: our service and the bare Express server under the same load on
// GET /v1/auth/me, each started with --trace-gc-nvp; prints per scavenge the bytes allocated since
// the last, survived (copied within the young generation), promoted (copied to the old one) and
// its pause (a scavenge costs with what it copies), and the mark-compacts with the heap they left.
//
//   npm run bench:gc -- [--route /v1/auth/me] [--duration 4]
import path from 'node:path';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { buildService, startBareServer, startService, UNLIMITED } from '../service';
import { stopProcess, type Server } from '../processes';
import { checkWrk, runWrk } from '../wrk';
import { seedBenchUser } from './seed';
import { loadConfig } from '../../src/config';
import { connectionString } from '../../src/platform/database';
import { appDatabase } from '../../src/platform/database-roles';

const FIELDS = ['allocated', 'new_space_survived', 'promoted', 'pause'] as const;

const mb = (b: number) => `${(b / 1048576).toFixed(2)} MB`;
const field = (line: string, name: string) => Number(new RegExp(`\\b${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);

/** The scavenges (gc=s) of `output`, averaged, and its mark-compacts (gc=mc): their pauses and the heap each left. */
function summarise(output: string[], requests: number): string {
  const lines = output.join('').split('\n');
  const scavenges = lines.filter((l) => l.includes('gc=s ')).map((l) => Object.fromEntries(FIELDS.map((f) => [f, field(l, f)])));
  const mean = (f: (typeof FIELDS)[number]) => scavenges.reduce((n, s) => n + s[f]!, 0) / Math.max(1, scavenges.length);
  const majors = lines.filter((l) => l.includes('gc=mc ')).map((l) => ({ pause: field(l, 'pause'), after: field(l, 'total_size_after') }));
  return (
    `${scavenges.length} scavenges for ${requests} requests; each: allocated ${mb(mean('allocated'))}, survived ${mb(mean('new_space_survived'))}, ` +
    `promoted ${mb(mean('promoted'))}, pause ${mean('pause').toFixed(2)} ms → ${((mean('pause') * scavenges.length * 1000) / Math.max(1, requests)).toFixed(1)} µs/request; ` +
    (majors.length
      ? `${majors.length} mark-compacts, pauses ${majors.map((m) => m.pause.toFixed(1)).join(', ')} ms, heap after ${mb(Math.max(...majors.map((m) => m.after)))}`
      : 'no mark-compact')
  );
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2), { route: '/v1/auth/me', duration: 4 }, {
    usage: 'usage: npm run bench:gc -- [--route /v1/auth/me] [--duration 4]',
    numbers: { '--duration': 'duration' },
    values: { '--route': { needs: 'a path', set: (o, v) => (o.route = v) } },
  });
  if (!checkWrk()) return;
  const mainJs = buildService(true);
  const scratch = openScratch('gc');
  try {
    const { dbUrl, token } = await seedBenchUser(scratch, 'bench-password-correct-horse', 4);
    const auth = `Bearer ${token}`;
    const flags = ['--trace-gc-nvp'];
    const ours = await startService('ours', {
      mainJs,
      cpu: 0,
      nodeFlags: flags,
      databaseUrl: dbUrl,
      redisUrl: scratch.redisUrl,
      redisPrefix: scratch.prefix,
      auth,
      env: { RATE_LIMIT_IP_PER_MINUTE: UNLIMITED },
    });
    const bareConfig = loadConfig({ NODE_ENV: 'test', DATABASE_URL: dbUrl });
    const bareEnv = { BARE_DATABASE_URL: await connectionString(appDatabase(bareConfig, dbUrl)), BARE_POOL_MAX: String(bareConfig.databasePoolMax) };
    const express = await startBareServer('bare Express 5 + pg', path.join(__dirname, '../bare/express.ts'), 0, bareEnv, flags);
    for (const server of [ours, express] as Server[]) {
      const target = { url: `${server.url}${opts.route}`, auth, connections: 50, cpu: 1 };
      await runWrk(target, 2);
      server.output.length = 0;
      const r = await runWrk(target, opts.duration);
      console.log(`${server.name.padEnd(22)} ${summarise(server.output, r.requests)}`);
      // bench/processes.ts keeps a child's last 200 chunks of output: more, and the first are gone.
      if (server.output.length >= 200) console.log('  (the trace filled the kept output: counts are of its end only; use a shorter --duration)');
      await stopProcess(server.child);
    }
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
