// A Redis Sentinel group of the test's own, as production runs Redis: a primary, a replica and
// three Sentinels (quorum 2), each a real process on a free port of 127.0.0.1 that the test may
// kill or freeze. Passwords everywhere (data nodes and Sentinels), as a production group has.
// Sentinel's detection is shortened (down-after-milliseconds) so a failover takes seconds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { freePort } from './ports';
import { PrivateServer } from './private-servers';
import { waitFor } from './wait';

export const MASTER_NAME = 'tenant-api';

export interface SentinelGroupOptions {
  /** Sentinel's `down-after-milliseconds`: how long a primary may not answer before it is down. */
  downAfterMs?: number;
  /** Sentinel's `failover-timeout` (also how soon a failed failover is tried again, at twice it). */
  failoverTimeoutMs?: number;
}

/** A redis-server of the group, keeping nothing on disk; `replicaOf` decides its role at start. */
export class RedisNode extends PrivateServer {
  constructor(
    port: number,
    private readonly dir: string,
    private readonly password: string,
    /** The primary's port this node starts as a replica of; null: it starts as a primary. */
    public replicaOf: number | null,
  ) {
    super(port);
  }

  protected command() {
    return {
      file: 'redis-server',
      args: [
        ...['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'no'],
        ...['--requirepass', this.password, '--masterauth', this.password],
        // A full sync streams the data without writing an RDB file anywhere.
        ...['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0', '--repl-diskless-load', 'on-empty-db'],
        ...(this.replicaOf ? ['--replicaof', '127.0.0.1', String(this.replicaOf)] : []),
      ],
    };
  }

  /** One command on a connection of its own (the test's, not the service's). */
  ask(...args: (string | number)[]): Promise<unknown> {
    return ask(this.port, this.password, args);
  }

  async role(): Promise<string> {
    const info = String(await this.ask('INFO', 'replication'));
    return /^role:(\w+)/m.exec(info)?.[1] ?? 'unknown';
  }
}

/** A redis-sentinel with its own configuration file (Sentinel rewrites it as it learns). */
export class SentinelNode extends PrivateServer {
  constructor(
    port: number,
    private readonly conf: string,
    private readonly password: string,
  ) {
    super(port);
  }

  protected command() {
    return { file: 'redis-sentinel', args: [this.conf] };
  }

  ask(...args: (string | number)[]): Promise<unknown> {
    return ask(this.port, this.password, args);
  }

  /** The port of the primary this Sentinel names now. */
  async primaryPort(): Promise<number> {
    const [, port] = (await this.ask('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string];
    return Number(port);
  }
}

export class SentinelGroup {
  private constructor(
    private readonly dir: string,
    readonly nodes: RedisNode[],
    readonly sentinels: SentinelNode[],
    readonly password: string,
    readonly sentinelPassword: string,
  ) {}

  static async start(opts: SentinelGroupOptions = {}): Promise<SentinelGroup> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'private-sentinel-'));
    const password = 'data-nodes-password';
    const sentinelPassword = 'sentinels-password';
    const primary = new RedisNode(await freePort(), dir, password, null);
    await primary.start();
    const replica = new RedisNode(await freePort(), dir, password, primary.port);
    await replica.start();
    const sentinels: SentinelNode[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = path.join(dir, `sentinel-${port}.conf`);
      fs.writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `requirepass ${sentinelPassword}`,
          `sentinel sentinel-pass ${sentinelPassword}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
          `sentinel auth-pass ${MASTER_NAME} ${password}`,
          `sentinel down-after-milliseconds ${MASTER_NAME} ${opts.downAfterMs ?? 1_000}`,
          `sentinel failover-timeout ${MASTER_NAME} ${opts.failoverTimeoutMs ?? 5_000}`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      const sentinel = new SentinelNode(port, conf, sentinelPassword);
      await sentinel.start();
      sentinels.push(sentinel);
    }
    const group = new SentinelGroup(dir, [primary, replica], sentinels, password, sentinelPassword);
    await group.settled(primary);
    return group;
  }

  /** The service's environment for this group: the Sentinels, the master name, both passwords. */
  get env(): Record<string, string> {
    return {
      REDIS_SENTINELS: this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
      REDIS_SENTINEL_NAME: MASTER_NAME,
      REDIS_PASSWORD: this.password,
      REDIS_SENTINEL_PASSWORD: this.sentinelPassword,
    };
  }

  /** The same as one `redis+sentinel://` REDIS_URL (the Sentinels' password stays apart). */
  get url(): string {
    return `redis+sentinel://:${this.password}@${this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${MASTER_NAME}`;
  }

  node(port: number): RedisNode {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no node of the group on port ${port}`);
    return node;
  }

  /** The node the first Sentinel names as primary. */
  async primary(): Promise<RedisNode> {
    return this.node(await this.sentinels[0]!.primaryPort());
  }

  /**
   * Waits until every Sentinel names another primary than `from` and that node says it is one;
   * answers it. Sentinel's own steps: `from` is down after down-after-milliseconds, the Sentinels
   * agree (quorum), elect a leader, which promotes the replica.
   */
  async failedOver(from: RedisNode, ms = 30_000): Promise<RedisNode> {
    const port = await waitFor(
      `the Sentinels to promote another node than ${from.port}`,
      async () => {
        const ports = await Promise.all(this.sentinels.map((s) => s.primaryPort().catch(() => null)));
        const port = ports[0];
        if (!port || port === from.port || ports.some((p) => p !== port)) return null;
        return (await this.node(port).role().catch(() => null)) === 'master' ? port : null;
      },
      ms,
    );
    return this.node(port);
  }

  /**
   * Starts a killed node again as a replica of the current primary (as Sentinel would have
   * reconfigured it) and waits until it has the data and the Sentinels count on it: the group can
   * fail over again.
   */
  async rejoin(node: RedisNode): Promise<void> {
    const primary = await this.primary();
    node.replicaOf = primary.port;
    await node.start();
    await this.settled(primary);
  }

  /** The replicas are in sync with `primary`, and every Sentinel knows them and the other two. */
  async settled(primary: RedisNode, ms = 30_000): Promise<void> {
    const replicas = this.nodes.filter((n) => n !== primary);
    await waitFor(
      'the replicas to sync and the Sentinels to know each other and the replicas',
      async () => {
        try {
          for (const replica of replicas) {
            if (!/^master_link_status:up/m.test(String(await replica.ask('INFO', 'replication')))) return false;
          }
          for (const sentinel of this.sentinels) {
            if ((await sentinel.primaryPort()) !== primary.port) return false;
            const known = (await sentinel.ask('SENTINEL', 'replicas', MASTER_NAME)) as string[][];
            const healthy = known.map(fields).filter((r) => !/s_down|o_down|disconnected/.test(r.flags ?? '') && r['master-link-status'] === 'ok');
            if (!replicas.every((r) => healthy.some((h) => Number(h.port) === r.port))) return false;
            if (((await sentinel.ask('SENTINEL', 'sentinels', MASTER_NAME)) as unknown[]).length !== this.sentinels.length - 1) return false;
          }
          return true;
        } catch {
          return false;
        }
      },
      ms,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.nodes].map((p) => p.kill()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** SENTINEL and INFO answers as flat [name, value, …] lists: into an object. */
function fields(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}

async function ask(port: number, password: string, args: (string | number)[]): Promise<unknown> {
  const client = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, commandTimeout: 1_000, connectTimeout: 1_000, protocol: 2 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    client.disconnect();
  }
}
