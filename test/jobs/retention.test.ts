// service.retention.enforce: finalized job runs older than 30 days go, every other run stays, and
// the run logs what each domain pruned (job runs, mail records, sessions, one-time codes).
import { Writable } from 'node:stream';
import winston from 'winston';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import * as store from '../../src/jobs/run-lifecycle-store';
import { waitFor } from '../support/wait';

const DAY_MS = 24 * 3600 * 1000;
const lines: string[] = [];
let t: TestApp;
let auth: string;

beforeAll(async () => {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = winston.createLogger({ level: 'info', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  t = await startTestApp({}, { workers: true, logger });
  auth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t?.close());

/** A run of a kind no worker knows, as it was `ageDays` ago, then moved to `state`. */
async function runFrom(ageDays: number, state: store.JobState, finalizedDaysAgo: number | null) {
  const now = t.clock.now.getTime();
  const at = new Date(now - ageDays * DAY_MS);
  const [run] = await store.insertRuns(t.ctx.db, [
    { kind: 'retention.sample', queue: 'default', priority: 0, maxAttempts: 1, timeoutMs: 1_000, payload: {}, scheduledAt: at, now: at, actorKind: 'system', actorId: null, requestId: null },
  ]);
  await t.ctx.db('job_runs')
    .where({ id: run!.id })
    .update({
      state,
      // Waiting: due tomorrow and handed over, so no sweep touches it meanwhile.
      scheduled_at: finalizedDaysAgo === null ? new Date(now + DAY_MS) : at,
      handed_over_at: at,
      finalized_at: finalizedDaysAgo === null ? null : new Date(now - finalizedDaysAgo * DAY_MS),
    });
  return run!.id;
}

it('deletes finalized runs older than 30 days and logs the count of every domain it pruned', async () => {
  const old = await Promise.all([runFrom(40, 'completed', 31), runFrom(40, 'discarded', 35), runFrom(40, 'cancelled', 30.5)]);
  const recent = await runFrom(40, 'completed', 29);
  const waiting = await runFrom(40, 'retryable', null);

  const res = await t.http.post('/ops/jobs/definitions/service.retention.enforce/run').set('Authorization', auth).expect(202);
  await waitFor('the retention run to complete', async () => (await store.getRun(t.ctx.db, res.body.id))?.state === 'completed');

  const left = (await t.ctx.db('job_runs').whereIn('id', [...old, recent, waiting]).select('id')).map((r) => Number(r.id));
  expect(left.sort()).toEqual([recent, waiting].sort());
  const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.message === 'retention enforced');
  expect(logged).toMatchObject({
    deleted: {
      job_runs: old.length,
      sent_mail: expect.any(Number),
      expired_sessions: expect.any(Number),
      expired_codes: expect.any(Number),
      audit_events: expect.any(Number),
      deleted_organisations: expect.any(Number),
      instances: expect.any(Number),
    },
    total: expect.any(Number),
  });
});
