// The service's processes as tests start them: `tsx src/main.ts <command>` from the checkout, and
// `node dist/src/main.js <command>` in the Docker image's layout; each with its own environment,
// killed (its whole process group) by killAll. Plus small HTTP and polling helpers for them.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { freePort } from './ports';

export const ROOT = path.resolve(__dirname, '../..');
/**
 * The service runs in ONE node process with tsx as a loader. Not the `tsx` command: it runs the
 * program in a child and relays signals, giving the child 30 ms to acknowledge one before it
 * SIGKILLs it, so on a loaded machine SIGTERM sometimes never reached our handler.
 */
const NODE_TS = [process.execPath, ['--import', 'tsx']] as const;

/** Settings the tests control; removed from the inherited environment unless set explicitly. */
const CONTROLLED = ['NODE_ENV', 'DATABASE_URL', 'SESSION_SECRET', 'PUBLIC_BASE_URL', 'PORT', 'HOST', 'LOG_LEVEL', 'REDIS_PREFIX', 'OPERATOR_EMAILS', 'DATA_DIR', 'EMBEDDED_POSTGRES_PORT'];

export interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Parsed JSON lines of stdout (non-JSON lines are skipped). */
  logs(): Record<string, any>[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<Proc>();
export const sockets = new Set<net.Socket>();

/** `src/main.ts <args>` from the checkout, through tsx. */
export function start(args: string[], env: Record<string, string | undefined>): Proc {
  return spawnProc([...NODE_TS[1], 'src/main.ts', ...args], ROOT, env);
}

/** `node dist/src/main.js <args>` in a directory laid out like the image (see buildImageLayout). */
export function startBuilt(imageDir: string, args: string[], env: Record<string, string | undefined>): Proc {
  return spawnProc(['dist/src/main.js', ...args], imageDir, env);
}

function spawnProc(nodeArgs: string[], cwd: string, env: Record<string, string | undefined>): Proc {
  const childEnv: Record<string, string | undefined> = { ...process.env };
  for (const name of CONTROLLED) delete childEnv[name];
  Object.assign(childEnv, env);
  // detached: its own process group, so cleanup can kill whatever it starts.
  const child = spawn(NODE_TS[0], nodeArgs, { cwd, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const proc: Proc = {
    child,
    stdout: () => out,
    stderr: () => err,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l)];
          } catch {
            return [];
          }
        }),
    exit,
  };
  running.add(proc);
  void exit.then(() => running.delete(proc));
  return proc;
}

/** Kills whatever a test left running (each child's whole process group) and closes open sockets. */
export async function killAll(): Promise<void> {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await Promise.all(
    [...running].map(async (p) => {
      try {
        process.kill(-p.child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await withTimeout(p.exit, 5_000, 'killed child to exit').catch(() => undefined);
    }),
  );
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a truthy value; throws after `ms`, with the process output. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, ms: number, proc?: Proc): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) {
      const output = proc ? `\nstdout:\n${proc.stdout().slice(-3000)}\nstderr:\n${proc.stderr().slice(-3000)}` : '';
      throw new Error(`timed out after ${ms} ms waiting for ${what}${output}`);
    }
    await sleep(100);
  }
}

export const waitForLog = (proc: Proc, message: string, ms = 10_000) =>
  waitFor(`log line "${message}"`, () => proc.logs().find((l) => l.message === message), ms, proc);

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** One request on a fresh connection (no agent), bounded by a timeout. */
export function request(port: number, method: string, urlPath: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent: false,
        timeout: 5_000,
        headers: { ...(payload ? { 'Content-Type': 'application/json' } : {}), ...opts.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode!, headers: res.headers, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export const get = (port: number, urlPath: string, headers?: Record<string, string>) => request(port, 'GET', urlPath, { headers });

/** Resolves with the connect error code, or null when the connection was accepted. */
export function tryConnect(port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.on('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** Environment for `serve` on a free port of 127.0.0.1, with its own Redis key prefix. */
export async function serveEnv(databaseUrlValue: string): Promise<{ port: number; env: Record<string, string> }> {
  const port = await freePort();
  return {
    port,
    env: {
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrlValue,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
      REDIS_PREFIX: `test:process:${randomBytes(4).toString('hex')}:`,
      // No load balancer here to wait for: SIGTERM drains at once (the delay's own test sets it).
      SHUTDOWN_DELAY_MS: '0',
    },
  };
}

/**
 * The Docker image's layout in a temporary directory: package.json, openapi.yaml, node_modules
 * (a link to the checkout's) and dist/ compiled from this checkout, and nothing else (no src/,
 * no tsx loader, no .data). dist/ is compiled file by file with TypeScript's transpileModule and
 * the options of tsconfig.build.json: under `isolatedModules` that emits what `npm run build`
 * emits, byte for byte, in a fraction of the time (type errors are `npm run typecheck`'s job).
 * So the test needs no earlier build and never reads a stale dist/.
 */
export function buildImageLayout(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenant-api-image-'));
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.build.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (!parsed) throw new Error('cannot read tsconfig.build.json');
  for (const file of parsed.fileNames) {
    const { outputText } = ts.transpileModule(fs.readFileSync(file, 'utf8'), { compilerOptions: parsed.options, fileName: file });
    const out = path.join(dir, 'dist', path.relative(ROOT, file).replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, outputText);
  }
  for (const file of ['package.json', 'openapi.yaml']) fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

export async function stopWithSigterm(proc: Proc, ms = 10_000) {
  proc.child.kill('SIGTERM'); // tsx relays it to the node process running main.ts
  return withTimeout(proc.exit, ms, 'the process to exit after SIGTERM');
}

