// The direction of dependencies (README "Layout"): each domain may use the floors below it and
// never one above; and no file is part of an import circle, type-only imports included, so the
// picture a reader draws from the imports is the true one.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../../src/config';

/**
 * The floors, lowest first. A file may import from its own floor or any floor below it. The names
 * are src/ folders or top-level files (without `.ts`); `handlers` is the handlers/ folder.
 */
export const FLOORS: string[][] = [
  ['errors', 'ids', 'logger', 'pagination', 'contract', 'config', 'platform'],
  ['audit'],
  ['jobs'],
  ['settings'],
  ['idempotency'],
  ['ratelimit'],
  ['mail'],
  ['releases'],
  ['sessions'],
  ['orgs'],
  ['projects'],
  ['accounts'],
  ['mfa'],
  ['passkeys'],
  ['signin'],
  ['social'],
  ['retention'],
  ['services'],
  ['app-context'],
  ['system'],
  ['http'],
  ['handlers'],
  ['app', 'app-context-factory', 'main'],
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(projectRoot, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(rel) : rel.endsWith('.ts') ? [rel] : [];
  });
}

/** The project files a file imports (static, type-only, re-exports and dynamic imports alike). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(projectRoot, file), 'utf8');
  const found = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName).filter((name) => name.startsWith('.'));
  return found.flatMap((name) => {
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), name));
    for (const candidate of [`${base}.ts`, `${base}/index.ts`, base]) {
      if (candidate.endsWith('.ts') && fs.existsSync(path.join(projectRoot, candidate))) return [candidate];
    }
    return [];
  });
}

/** The floor name a file belongs to: its src/ folder or top-level file, or `handlers`; null outside both. */
function placeOf(file: string): string | null {
  if (file.startsWith('handlers/')) return 'handlers';
  const m = /^src\/([^/]+?)(?:\.ts$|\/)/.exec(file);
  return m?.[1] ?? null;
}

const floorOf = new Map(FLOORS.flatMap((names, i) => names.map((n) => [n, i] as const)));
const files = [...sourceFiles('src'), ...sourceFiles('handlers')];
const graph = new Map(files.map((f) => [f, importsOf(f)]));

it('places every folder of src/ (and handlers/) on a floor', () => {
  const unplaced = [...new Set(files.map(placeOf))].filter((p) => p === null || !floorOf.has(p));
  expect(unplaced).toEqual([]);
});

it('imports only from the same floor or below', () => {
  const upward: string[] = [];
  for (const [file, imports] of graph) {
    const from = floorOf.get(placeOf(file)!)!;
    for (const target of imports) {
      const place = placeOf(target);
      if (place === null) continue; // db/migrations, codegen: below everything
      if (floorOf.get(place)! > from) upward.push(`${file} -> ${target}`);
    }
  }
  expect(upward).toEqual([]);
});

it('has no import circle between files', () => {
  // Tarjan's strongly connected components: any component of more than one file is a circle.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(component.sort());
    }
  };
  for (const f of graph.keys()) if (!indices.has(f)) visit(f);
  expect(circles).toEqual([]);
});
