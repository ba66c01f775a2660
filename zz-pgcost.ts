import knex from 'knex';
import fs from 'node:fs';
import { migrateLatest } from './src/platform/database';
import { createLogger } from './src/logger';
import * as store from './src/jobs/store';
const cpu = (pid: number) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; }; // ms
(async () => {
  const db = knex({ client: 'pg', connection: 'postgres://postgres@127.0.0.1:5432/jobx', pool: { min: 1, max: 1 } });
  await migrateLatest(db, createLogger('warn'));
  for (const ddl of (process.env.DDL ?? '').split(';').filter(Boolean)) await db.raw(ddl);
  const pid = (await db.raw('select pg_backend_pid() as p')).rows[0].p;
  const now = new Date();
  const B = Number(process.env.B ?? 50);
  const mk = () => Array.from({ length: B }, (_, i) => ({ kind: 'k', queue: 'default', priority: 0, maxAttempts: 1, timeoutMs: 60000, payload: { i }, scheduledAt: now, now, actorKind: 'system' as const, actorId: null, requestId: null }));
  const R = 200;
  for (let round = 0; round < 3; round++) {
    const all: number[] = [];
    let c = cpu(pid);
    for (let b = 0; b < R; b++) all.push(...(await store.insertRuns(db, mk())).map((r) => r.id));
    const ins = cpu(pid) - c; c = cpu(pid);
    for (let b = 0; b < R; b++) await store.writeAttempts(db, { start: all.slice(b * B, b * B + B), complete: [], at: now });
    const st = cpu(pid) - c; c = cpu(pid);
    for (let b = 0; b < R; b++) await store.writeAttempts(db, { start: [], complete: all.slice(b * B, b * B + B), at: now });
    const co = cpu(pid) - c;
    const per = (ms: number) => ((ms * 1000) / (R * B)).toFixed(1);
    console.log(`PG CPU µs per job: insert ${per(ins)}, start ${per(st)}, complete ${per(co)}, total ${per(ins + st + co)}`);
  }
  await db.destroy();
})();
