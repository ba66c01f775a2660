// Two builds of our service on one route, rounds interleaved: a commit (`--base`, built in a git
// worktree) against the working tree. On a noisy machine a change of a few percent is lost between
// two runs of bench:http minutes apart; here both builds meet the same noise, round by round, and
// the ratio is taken per round. Both serve the same scratch database and Redis, pinned to the same
// CPU, one at a time.
//
//   npm run bench:ab -- --base <commit> [--route login|me|ping] [--bcrypt-cost 4] [--rounds 5]
//                       [--duration 5] [--warmup 2] [--connections 8] [--profile]
//
// --profile: after the rounds, a CPU profile of the working tree's build under the same load.
// Login at a low bcrypt cost (the default 4: ~1 ms a compare instead of ~45) measures what a
// sign-in costs besides bcrypt; at cost 10 the compare hides it (bench:http measures that ratio).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuMs, cpuPinning, pinByDefault, stopProcess, type Server } from '../processes';
import { checkWrk, runWrk, wrkRate, wrkSummary } from '../wrk';
import { buildService, profileService, startService, UNLIMITED } from '../service';
import { projectRoot } from '../../src/config';
import { seedBenchUser } from '../http/seed';

const ROUTES = ['login', 'me', 'ping'] as const;
type Route = (typeof ROUTES)[number];

interface Options {
  base: string;
  route: Route;
  bcryptCost: number;
  rounds: number;
  duration: number;
  warmup: number;
  connections: number;
  profile: boolean;
}

const PASSWORD = 'correct horse battery staple';

/** The commit's build, in a worktree of its own (node_modules shared): its dist/src/main.js. */
function buildCommit(commit: string): { mainJs: string; remove(): void } {
  const sha = spawnSync('git', ['rev-parse', '--verify', `${commit}^{commit}`], { cwd: projectRoot, encoding: 'utf8' }).stdout.trim();
  if (!sha) throw new Error(`--base ${commit}: not a commit`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-ab-${sha.slice(0, 8)}-`));
  const remove = () => {
    spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: projectRoot });
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const git = spawnSync('git', ['worktree', 'add', '--detach', dir, sha], { cwd: projectRoot, encoding: 'utf8' });
  if (git.status !== 0) throw new Error(`git worktree add: ${git.stderr}`);
  fs.symlinkSync(path.join(projectRoot, 'node_modules'), path.join(dir, 'node_modules'));
  console.log(`building ${sha.slice(0, 8)} in ${dir}`);
  const tsc = spawnSync(path.join(projectRoot, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  if (tsc.status !== 0) {
    remove();
    throw new Error('build of the base failed');
  }
  return { mainJs: path.join(dir, 'dist/src/main.js'), remove };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const usage = 'usage: npm run bench:ab -- --base <commit> [--route login|me|ping] [--bcrypt-cost 4] [--rounds 5] [--duration 5] [--warmup 2] [--connections 8] [--profile]';
  const opts = parseOptions<Options>(process.argv.slice(2), { base: '', route: 'login', bcryptCost: 4, rounds: 5, duration: 5, warmup: 2, connections: 8, profile: false }, {
    usage,
    switches: { '--profile': (o) => (o.profile = true) },
    numbers: { '--bcrypt-cost': 'bcryptCost', '--rounds': 'rounds', '--duration': 'duration', '--warmup': 'warmup', '--connections': 'connections' },
    values: {
      '--base': { needs: 'a commit', set: (o, v) => (o.base = v) },
      '--route': { needs: ROUTES.join(' or '), set: (o, v) => (o.route = v as Route) },
    },
  });
  if (!opts.base) throw new Error(usage);
  if (!ROUTES.includes(opts.route)) throw new Error(`--route: one of ${ROUTES.join(', ')}`);
  if (!checkWrk()) return;
  const { serverCpu, wrkCpu } = cpuPinning(pinByDefault());
  const base = buildCommit(opts.base);
  const scratch = openScratch('ab');
  try {
    const builds = { base: base.mainJs, 'working tree': buildService(true) };
    const { dbUrl, email, token } = await seedBenchUser(scratch, PASSWORD, opts.bcryptCost);
    const auth = `Bearer ${token}`;
    const target = {
      login: { path: '/v1/auth/login', method: 'POST' as const, body: JSON.stringify({ email, password: PASSWORD, transport: 'bearer' }) },
      me: { path: '/v1/auth/me', auth },
      ping: { path: '/v1/ping' },
    }[opts.route];
    // Login uses libuv's threads for bcrypt: not pinned, as in bench:http.
    const cpu = opts.route === 'login' ? null : serverCpu;
    const start = (name: string, mainJs: string, nodeFlags: string[] = []) =>
      startService(name, {
        mainJs,
        cpu,
        nodeFlags,
        databaseUrl: dbUrl,
        redisUrl: scratch.redisUrl,
        redisPrefix: scratch.prefix,
        auth,
        env: { BCRYPT_COST: String(opts.bcryptCost), RATE_LIMIT_LOGIN_PER_MINUTE: UNLIMITED, RATE_LIMIT_IP_PER_MINUTE: UNLIMITED },
      });
    console.log(
      `\nA/B: ${opts.route} (${target.path}), node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}, ` +
        `wrk -c${opts.connections}, ${opts.rounds} rounds of ${opts.duration} s each${opts.route === 'login' ? `, bcrypt cost ${opts.bcryptCost}` : ''}`,
    );
    const ratios: number[] = [];
    const rows: Record<string, { rps: number[]; cpu: number[]; p99: number[] }> = { base: { rps: [], cpu: [], p99: [] }, 'working tree': { rps: [], cpu: [], p99: [] } };
    for (let round = 1; round <= opts.rounds; round++) {
      // Alternate which build goes first, so neither always meets the machine warmer.
      const order = (round % 2 ? ['base', 'working tree'] : ['working tree', 'base']) as (keyof typeof builds)[];
      const rps: Record<string, number> = {};
      for (const name of order) {
        const server: Server = await start(name, builds[name]);
        try {
          const wrk = { url: `${server.url}${target.path}`, connections: opts.connections, cpu: wrkCpu, ...target };
          await runWrk(wrk, opts.warmup);
          const cpuBefore = cpuMs(server.child.pid!);
          const s = wrkSummary(await runWrk(wrk, opts.duration));
          const cpuPerRequest = ((cpuMs(server.child.pid!) - cpuBefore) * 1000) / Math.max(1, s.requests);
          if (s.errors > 0) console.log(`    ${name}: ${s.errors} errors (non-2xx included)`);
          rows[name]!.rps.push(s.rps);
          rows[name]!.cpu.push(cpuPerRequest);
          rows[name]!.p99.push(s.p99ms);
          rps[name] = s.rps;
          console.log(`  round ${round}  ${name.padEnd(13)} ${s.rps.toFixed(1).padStart(9)} req/s  p99 ${s.p99ms.toFixed(1).padStart(7)} ms  CPU ${cpuPerRequest.toFixed(0).padStart(6)} µs/req`);
        } finally {
          await stopProcess(server.child);
        }
      }
      ratios.push(rps['working tree']! / rps.base!);
    }
    console.log(`\nmedian of ${opts.rounds} rounds:`);
    for (const [name, r] of Object.entries(rows)) {
      console.log(`  ${name.padEnd(13)} ${median(r.rps).toFixed(1).padStart(9)} req/s  p99 ${median(r.p99).toFixed(1).padStart(7)} ms  CPU ${median(r.cpu).toFixed(0).padStart(6)} µs/req`);
    }
    console.log(`  working tree / base: ${median(ratios).toFixed(3)}× req/s (rounds: ${ratios.map((x) => x.toFixed(3)).join(', ')})`);
    if (opts.profile) {
      await profileService({
        profileDir: scratch.profileDir,
        start: (nodeFlags) => start('working tree (profiled)', builds['working tree'], nodeFlags),
        warmUp: (server) => runWrk({ url: `${server.url}${target.path}`, connections: opts.connections, cpu: wrkCpu, ...target }, opts.warmup),
        load: (server) => runWrk({ url: `${server.url}${target.path}`, connections: opts.connections, cpu: wrkCpu, ...target }, opts.duration),
        heading: (r) => `\nCPU profile of the working tree under ${opts.route} (${wrkRate(r).toFixed(0)} req/s while profiled; load phase only; the thread pool's CPU is not in it):`,
      });
    }
  } finally {
    await scratch.cleanup();
    base.remove();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
