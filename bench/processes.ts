// Child processes of the benchmarks: every one is registered, so that cleanup can stop them all;
// servers on free ports (optionally pinned to a CPU with taskset), waited for until ready; the
// CPU time of a process from /proc.
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { projectRoot } from '../src/config';

/** Every child process still running (servers, wrk, helper scripts). */
const children = new Set<ChildProcess>();

function track(child: ChildProcess): void {
  children.add(child);
  child.on('exit', () => children.delete(child));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether --no-pin is off by default: on machines with 2 or more cores. */
export const pinByDefault = () => os.cpus().length >= 2;

/**
 * CPU pinning of an HTTP benchmark: each server under test on CPU 0 and wrk on CPU 1, so that the
 * load generator never takes the server's core; both null (float) when `pin` is off.
 */
export function cpuPinning(pin: boolean): { serverCpu: number | null; wrkCpu: number | null } {
  return { serverCpu: pin ? 0 : null, wrkCpu: pin ? 1 : null };
}

/** The command run on CPU `cpu` only (taskset execs it: the same pid), or as it is when null. */
export function pinned(cpu: number | null, cmd: string, args: string[]): [string, string[]] {
  return cpu === null ? [cmd, args] : ['taskset', ['-c', String(cpu), cmd, ...args]];
}

export interface Server {
  name: string;
  url: string;
  child: ChildProcess;
  /** The last 200 chunks of its stdout and stderr, shown when it fails to start. */
  output: string[];
}

/** Starts a server listening on 127.0.0.1:`port` (not waiting for it: see waitFor). */
export function startServer(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, port: number): Server {
  const child = spawn(cmd, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { name, url: `http://127.0.0.1:${port}`, child, output };
}

export async function waitFor(server: Server, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`${server.name} exited (${server.child.exitCode}):\n${server.output.join('')}`);
    if (await ready().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`${server.name} did not become ready in ${timeoutMs} ms:\n${server.output.join('')}`);
}

/** SIGTERM, then SIGKILL after `timeoutMs`; resolves when it has exited. */
export async function stopProcess(child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** Stops every child process started through this module. */
export async function stopChildren(): Promise<void> {
  await Promise.all([...children].map((c) => stopProcess(c)));
}

/**
 * Runs a command to its end and parses the JSON that follows `marker` on the first line of its
 * output (stdout or stderr) that starts with it; rejects with the whole output when it fails or
 * prints no such line. `what` names it in that error.
 */
export function runForJsonLine<T>(what: string, cmd: string, args: string[], options: SpawnOptions, marker: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(marker));
      if (code !== 0 || !line) return reject(new Error(`${what} failed (${code}):\n${out}`));
      resolve(JSON.parse(line.slice(marker.length)) as T);
    });
  });
}

let clockTicks: number | undefined;

/** utime + stime of a process (all its threads), in ms (Linux /proc; `gone` when it cannot be read, e.g. the process has exited). */
export function cpuMs(pid: number, gone = Number.NaN): number {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
  } catch {
    return gone;
  }
}
