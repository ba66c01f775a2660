// Every operation that takes an Idempotency-Key (read from the contract), sent twice with one key:
// the retry gets the first answer again, byte for byte, marked `Idempotent-Replayed: true`, and
// the database is exactly as the first request left it (every table's rows: no second row, audit
// event, job run or mail record).
import { loadContract } from '../../src/contract';
import { acceptsIdempotencyKey } from '../../src/http/idempotent-call';
import { appForFile, databaseDigest, KEYED_REQUESTS, newKey, send } from './requests';

const contract = loadContract();
const accepting = [...contract.operations.values()].filter((op) => acceptsIdempotencyKey(contract, op)).map((op) => op.operationId);

const app = appForFile();

it('has a request for every operation that takes a key, and none for another', () => {
  expect(accepting.length).toBeGreaterThan(10);
  expect(accepting.filter((id) => !(id in KEYED_REQUESTS))).toEqual([]);
  expect(Object.keys(KEYED_REQUESTS).filter((id) => !accepting.includes(id))).toEqual([]);
});

describe.each(accepting)('%s', (operationId) => {
  it('replays its answer to a retry with the same key, byte for byte, and changes nothing', async () => {
    const call = await KEYED_REQUESTS[operationId]!(app.t, app.owner);
    const key = newKey();
    const untouched = await databaseDigest(app.owner);
    const first = await send(app.t, call, key);
    expect(first.status).toBeGreaterThanOrEqual(200);
    expect(first.status).toBeLessThan(300);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const before = await databaseDigest(app.owner);
    // The first request did its work, and recorded its answer beside it.
    const changed = Object.keys(before).filter((table) => before[table] !== untouched[table]);
    expect(changed).toContain('idempotency_keys');
    expect(changed.length).toBeGreaterThan(1);
    const [recorded] = await app.owner('idempotency_keys').where({ key: key.slice(1, -1) });
    expect({ status: recorded.status, body: recorded.body?.toString() ?? '' }).toEqual({ status: first.status, body: first.text ?? '' });

    const again = await send(app.t, call, key);
    expect(again.status).toBe(first.status);
    expect(again.text).toBe(first.text);
    expect(again.headers['content-length']).toBe(first.headers['content-length']);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(await databaseDigest(app.owner)).toEqual(before);
  });
});
