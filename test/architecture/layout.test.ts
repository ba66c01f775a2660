// The layout rules of README "Layout", checked by a tool rather than kept by prose:
// SQL only in store files, domains free of HTTP, every declared error code documented in the
// contract with its status, handlers that call services by their own names.
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config';
import { loadContract } from '../../src/contract';
import { declaredErrors } from '../../src/errors';
import { problemCodes } from '../support/problem-codes';
import '../../src/services'; // loads every domain, so every domain's errors are declared
import '../../src/http/router';

function files(dir: string): string[] {
  return fs.readdirSync(path.join(projectRoot, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? files(rel) : rel.endsWith('.ts') ? [rel] : [];
  });
}
const read = (file: string) => fs.readFileSync(path.join(projectRoot, file), 'utf8');
const isStore = (file: string) => /(^|\/)store\.ts$|-store\.ts$/.test(file);

it('holds SQL only in store files (src/**/store.ts, src/**/*-store.ts) and the platform layer', () => {
  // A knex query: db('table'), trx('table'), x.db('table'), .raw( …
  const sql = /\b(?:db|trx|knex)\(\s*['"`]|\.raw\(|\bdb\.schema\b/;
  const offenders = files('src')
    .filter((f) => !isStore(f) && !f.startsWith('src/platform/'))
    .filter((f) => sql.test(read(f)));
  expect(offenders).toEqual([]);
  expect(files('handlers').filter((f) => sql.test(read(f)))).toEqual([]);
});

it('keeps domains free of HTTP: only src/http and the composition root (app, app-context, main) import src/http', () => {
  const offenders = files('src')
    .filter((f) => !f.startsWith('src/http/') && !['src/app.ts', 'src/main.ts', 'src/app-context.ts', 'src/app-context-factory.ts'].includes(f))
    .filter((f) => /from '(\.\.?\/)+http\//.test(read(f)) || /from '\.\/http\//.test(read(f)));
  expect(offenders).toEqual([]);
});

it('documents every declared error code in the contract, with its status', () => {
  const contract = loadContract();
  const documented = new Set<string>();
  for (const item of Object.values<any>(contract.document.paths)) {
    for (const op of Object.values<any>(item)) {
      for (const [status, response] of Object.entries<any>(op?.responses ?? {})) {
        for (const code of problemCodes(contract.document, response)) documented.add(`${status} ${code}`);
      }
    }
  }
  // Answers no operation gives (405 for a wrong method) are documented as shared responses.
  for (const response of Object.values<any>(contract.document.components.responses ?? {})) {
    const status = /^\d{3}$/.test(String(response['x-status'])) ? response['x-status'] : null;
    for (const code of problemCodes(contract.document, response)) if (status) documented.add(`${status} ${code}`);
  }
  expect(declaredErrors.length).toBeGreaterThan(10);
  const missing = declaredErrors.filter((e) => !documented.has(`${e.status} ${e.code}`)).map((e) => `${e.domain}: ${e.status} ${e.code}`);
  expect(missing).toEqual([]);
});

it('handlers import domain functions under their own names (searchable from handler to domain)', () => {
  const renamed = files('handlers').filter((f) => /import\s*\{[^}]*\bas\b[^}]*\}\s*from\s*'\.\.\/\.\.\/src\//.test(read(f)));
  expect(renamed).toEqual([]);
});
