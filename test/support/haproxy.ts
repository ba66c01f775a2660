// Debian's haproxy (/usr/sbin/haproxy, 2.6) in front of API instances, as users deploy it: a
// frontend on a free port of 127.0.0.1, one backend server per instance, health checks on
// /readyz, and an admin socket the test reads the servers' states from.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';

export const HAPROXY = process.env.HAPROXY_BIN ?? '/usr/sbin/haproxy';

export interface Backend {
  name: string;
  port: number;
}

export interface HaproxyOptions {
  /** Milliseconds between two health checks of a server (`inter`). */
  checkIntervalMs?: number;
}

export class Haproxy {
  private child: ChildProcess | null = null;
  private output = '';
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /**
   * Starts haproxy balancing `backends` and waits until it accepts connections (and its admin
   * socket exists). The servers'
   * states start as haproxy finds them (an instance not ready yet is DOWN): see `waitForStatus`.
   */
  static async start(backends: Backend[], opts: HaproxyOptions = {}): Promise<Haproxy> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-'));
    const proxy = new Haproxy(await freePort(), dir);
    fs.writeFileSync(proxy.configFile, haproxyConfig(proxy.port, proxy.socketPath, backends, opts));
    // -db: foreground, no daemon, so the child is haproxy itself and dies with its group.
    const child = spawn(HAPROXY, ['-db', '-f', proxy.configFile], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    proxy.child = child;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (proxy.output += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (proxy.output += d));
    proxy.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    // The admin socket too: haproxy may accept on the frontend a moment before it creates the
    // socket (CI once read the servers' states in that moment: connect ENOENT admin.sock).
    while (!(await accepts(proxy.port)) || !fs.existsSync(proxy.socketPath)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`haproxy did not start:\n${proxy.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private get configFile(): string {
    return path.join(this.dir, 'haproxy.cfg');
  }

  private get socketPath(): string {
    return path.join(this.dir, 'admin.sock');
  }

  /** What haproxy printed (its warnings and alerts: a server going DOWN or UP is logged there). */
  log(): string {
    return this.output;
  }

  /** One admin-socket command's answer (haproxy closes the socket after it). */
  command(line: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.socketPath);
      let answer = '';
      socket.setEncoding('utf8').on('data', (d: string) => (answer += d));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
      socket.write(`${line}\n`);
    });
  }

  /** `show stat` of the backend's servers, one record per server (haproxy's CSV columns: svname, status, hrsp_2xx…). */
  async servers(): Promise<Record<string, string>[]> {
    const [header, ...rows] = (await this.command('show stat')).trim().split('\n');
    const columns = header!.replace(/^# /, '').split(',');
    return rows
      .map((row) => Object.fromEntries(row.split(',').map((value, i) => [columns[i], value])))
      .filter((r) => r.pxname === 'api' && !['FRONTEND', 'BACKEND'].includes(r.svname));
  }

  /** Each server's status as haproxy's checks see it: name → UP, DOWN, "UP 1/2", MAINT… */
  async serverStatus(): Promise<Map<string, string>> {
    return new Map((await this.servers()).map((r) => [r.svname!, r.status!]));
  }

  /** Waits until haproxy's own health checks show `server` as `status` (UP or DOWN). */
  async waitForStatus(server: string, status: 'UP' | 'DOWN', timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = (await this.serverStatus()).get(server);
      if (now === status) return;
      if (Date.now() > deadline) throw new Error(`haproxy still sees ${server} as ${now ?? 'unknown'} after ${timeoutMs} ms, not ${status}:\n${this.output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null) {
      try {
        process.kill(-this.child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await this.exited;
    }
    this.child = null;
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The configuration, setting by setting as a deploy that wants to drop nothing would: whatever
 * haproxy would hide (a retry on another server) is switched off, so a request the instances
 * fail reaches the client and the test counts it.
 */
export function haproxyConfig(port: number, socketPath: string, backends: Backend[], opts: HaproxyOptions = {}): string {
  const inter = opts.checkIntervalMs ?? 1_000;
  return `global
  # The admin socket: the test reads each server's state (show stat) from it.
  stats socket ${socketPath} mode 600 level admin
  maxconn 4096

defaults
  mode http
  # Connections to 127.0.0.1 are made at once; a listener that is gone refuses at once.
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 10s
  # A busy but healthy instance may take a while to answer its check; a stopping one answers
  # 503 at once, so a longer check timeout does not slow its removal down.
  timeout check ${2 * inter}ms
  # haproxy retries a failed connection 3 times by default (and retry-on / option redispatch
  # would resend requests elsewhere): a closed listener would then cost a little latency, not a
  # failed request, and the test could not see it. No retries: every failure reaches the client.
  retries 0

frontend api_in
  bind 127.0.0.1:${port}
  default_backend api

backend api
  balance roundrobin
  # Which instance answered, so the test can tell every request was served by one.
  http-response set-header X-Served-By %s
  # Readiness, as load balancers check it: /readyz answers 503 from the moment an instance gets
  # SIGTERM, and while it is starting (database not ready yet).
  option httpchk GET /readyz
  http-check expect status 200
  # One failed check takes a server out, one passing check puts it back: the instance's
  # SHUTDOWN_DELAY_MS must cover one interval plus one check's timeout (3 × inter here).
  default-server check inter ${inter}ms fall 1 rise 1
${backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port}`).join('\n')}
`;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
