// Summarises a V8 .cpuprofile (node --cpu-prof): where the service's CPU time goes, by package
// (self time, and by layer: a sample charged to the nearest layer on its stack, helpers
// included) and by function (inclusive), so "which layer costs what per request" can be read off directly.
import fs from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** node_modules/<pkg> (scoped too), our own folders (src/http, handlers, …), node internals, or a V8 pseudo-frame. */
export function packageOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const m = /\/(dist\/)?(src\/[a-z-]+|handlers\/[a-z-]+|handlers|db)\//.exec(url);
  if (m) return `ours:${m[2]}`;
  return path.basename(url);
}

/**
 * Layers a request passes through. A sample is charged to the layer closest to the leaf on its
 * stack, so helpers (lodash, bath-es5, node:* calls such as setHeader, JSON.stringify) count for
 * the layer that called them; samples with no layer on the stack are node core's own work.
 */
const LAYERS = new Set(['openapi-backend', 'ajv', 'helmet', 'winston', 'logform', 'ioredis', 'express', 'router', 'body-parser', 'cookie-parser', 'knex', 'pg', 'bcrypt']);
const isLayer = (pkg: string) => LAYERS.has(pkg) || pkg.startsWith('ours:');

const frameKey = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${packageOf(f)}:${path.basename(f.url)}:${f.lineNumber + 1}`;

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  busyMs: number;
  selfByPackage: [string, number][];
  byLayer: [string, number][];
  inclusiveByFunction: [string, number][];
  selfByFunction: [string, number][];
}

/**
 * `window`: only the samples in [end - fromEndUs, end - toEndUs], measured back from the profile's
 * end: e.g. the load phase, leaving out start-up and shutdown.
 */
export function summariseProfile(file: string, window?: { fromEndUs: number; toEndUs: number }): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const selfPkg = new Map<string, number>();
  const layer = new Map<string, number>();
  const inclFn = new Map<string, number>();
  const selfFn = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  let total = 0;
  let idle = 0;
  let at = profile.startTime;
  const from = window ? profile.endTime - window.fromEndUs : -Infinity;
  const to = window ? profile.endTime - window.toEndUs : Infinity;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const us = profile.timeDeltas[i + 1] ?? 0; // a sample's time is the gap to the next one
    if (at < from || at > to) continue;
    let node = byId.get(profile.samples[i]!);
    if (!node) continue;
    total += us;
    if (node.callFrame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const leafPkg = packageOf(node.callFrame);
    add(selfPkg, leafPkg, us);
    add(selfFn, node.callFrame.url ? frameKey(node.callFrame) : node.callFrame.functionName, us);
    let owner: string | undefined;
    const fns = new Set<string>();
    while (node) {
      const f = node.callFrame;
      if (f.functionName !== '(root)') {
        const pkg = packageOf(f);
        if (owner === undefined && isLayer(pkg)) owner = pkg;
        if (f.url) fns.add(frameKey(f));
      }
      const p = parent.get(node.id);
      node = p === undefined ? undefined : byId.get(p);
    }
    add(layer, owner ?? (leafPkg.startsWith('node:') || leafPkg === '(native)' ? 'node core (http parser, sockets, timers)' : leafPkg), us);
    for (const f of fns) add(inclFn, f, us);
  }
  const sorted = (m: Map<string, number>) => [...m.entries()].map(([k, v]) => [k, v / 1000] as [string, number]).sort((a, b) => b[1] - a[1]);
  return {
    totalMs: total / 1000,
    idleMs: idle / 1000,
    busyMs: (total - idle) / 1000,
    selfByPackage: sorted(selfPkg),
    byLayer: sorted(layer),
    inclusiveByFunction: sorted(inclFn),
    selfByFunction: sorted(selfFn),
  };
}

/** Report lines: µs of CPU per request for each package and the heaviest functions. */
export function formatProfile(s: ProfileSummary, requests: number, top = 20): string[] {
  const perReq = (ms: number) => ((ms * 1000) / Math.max(1, requests)).toFixed(1).padStart(7);
  const pct = (ms: number) => `${((ms / Math.max(1e-9, s.busyMs)) * 100).toFixed(1).padStart(5)}%`;
  const lines = [
    `sampled ${s.totalMs.toFixed(0)} ms, busy ${s.busyMs.toFixed(0)} ms (idle ${s.idleMs.toFixed(0)} ms), ${requests} requests → ${perReq(s.busyMs).trim()} µs CPU/request on the main thread`,
    '',
    `${'package (self time)'.padEnd(40)} ${'µs/req'.padStart(7)} ${'share'.padStart(6)}`,
  ];
  for (const [k, v] of s.selfByPackage.slice(0, top)) lines.push(`${k.padEnd(40)} ${perReq(v)} ${pct(v)}`);
  lines.push('', `${'layer (with the helpers it calls)'.padEnd(40)} ${'µs/req'.padStart(7)} ${'share'.padStart(6)}`);
  for (const [k, v] of s.byLayer.slice(0, top)) lines.push(`${k.padEnd(40)} ${perReq(v)} ${pct(v)}`);
  lines.push('', `${'function (inclusive)'.padEnd(80)} ${'µs/req'.padStart(7)} ${'share'.padStart(6)}`);
  for (const [k, v] of s.inclusiveByFunction.slice(0, top)) lines.push(`${k.slice(0, 80).padEnd(80)} ${perReq(v)} ${pct(v)}`);
  lines.push('', `${'function (self time)'.padEnd(80)} ${'µs/req'.padStart(7)} ${'share'.padStart(6)}`);
  for (const [k, v] of s.selfByFunction.slice(0, top)) lines.push(`${k.slice(0, 80).padEnd(80)} ${perReq(v)} ${pct(v)}`);
  return lines;
}

if (require.main === module) {
  const [file, requests] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx bench/http/cpu-profile.ts <file.cpuprofile> [requests]');
    process.exit(2);
  }
  for (const line of formatProfile(summariseProfile(file), Number(requests ?? 1))) console.log(line);
}
