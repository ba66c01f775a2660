// One-off: merges contract-src/*.yaml (base first) into a single OpenAPI document.
// Usage: node scripts/merge-contract.mjs [out=openapi.yaml]
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
const dir = new URL('../contract-src/', import.meta.url).pathname;
const out = process.argv[2] ?? new URL('../openapi.yaml', import.meta.url).pathname;
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
const doc = YAML.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
doc.paths ??= {};
for (const f of files.slice(1)) {
  const part = YAML.parse(fs.readFileSync(path.join(dir, f), 'utf8')) ?? {};
  for (const [p, item] of Object.entries(part.paths ?? {})) {
    if (doc.paths[p]) {
      for (const [m, op] of Object.entries(item)) {
        if (doc.paths[p][m]) throw new Error(`${f}: duplicate ${m} ${p}`);
        doc.paths[p][m] = op;
      }
    } else doc.paths[p] = item;
  }
  for (const [kind, entries] of Object.entries(part.components ?? {})) {
    doc.components[kind] ??= {};
    for (const [name, value] of Object.entries(entries)) {
      if (doc.components[kind][name]) throw new Error(`${f}: duplicate components.${kind}.${name}`);
      doc.components[kind][name] = value;
    }
  }
}
fs.writeFileSync(out, YAML.stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false }));
console.log(`wrote ${out}: ${Object.keys(doc.paths).length} paths from ${files.length} files`);
