// Bare bcrypt compare at a given cost, in its own process: the ceiling for POST /v1/auth/login.
// `concurrency` compares are kept in flight (the async API runs them on libuv's thread pool, as
// login does). Prints one line: BCRYPT_JSON {...}.
//   node --import tsx bench/http/bcrypt.ts <cost> <seconds> <concurrency>
import bcrypt from 'bcrypt';

async function main() {
  const [cost = 10, seconds = 10, concurrency = 8] = process.argv.slice(2).map(Number);
  // Same input shape as login's verifyPassword: a 44-character base64 SHA-256 pre-hash.
  const input = 'pVb3cK1Zb1yqO2t2o9U0m6vC3eN4fQ8rS5tU7wX9yZ0=';
  const hash = await bcrypt.hash(input, cost);
  for (let i = 0; i < concurrency; i++) await bcrypt.compare(input, hash); // warm the pool
  const latencies: number[] = [];
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const lane = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      if (!(await bcrypt.compare(input, hash))) throw new Error('bcrypt.compare returned false');
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  const out = {
    ops: latencies.length, ms, ops_per_s: (latencies.length / ms) * 1000, p50_ms: pct(50), p99_ms: pct(99), threadpool: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
    // The process's CPU (the pool's threads included) per compare: login's CPU per request is
    // compared with it (the compares themselves and what else a sign-in costs).
    cpu_us_per_op: (cpu.user + cpu.system) / Math.max(1, latencies.length),
  };
  console.log(`BCRYPT_JSON ${JSON.stringify(out)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
