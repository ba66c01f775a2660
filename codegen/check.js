// CI: regenerate the contract types and fail when they differ from the committed ones.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const committed = path.join(root, 'codegen', 'api-types.ts');
const fresh = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'codegen-')), 'api-types.ts');
execFileSync(process.execPath, [path.join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), path.join(root, 'openapi.yaml'), '--output', fresh], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (!fs.existsSync(committed) || fs.readFileSync(committed, 'utf8') !== fs.readFileSync(fresh, 'utf8')) {
  console.error('codegen/api-types.ts is out of date with openapi.yaml: run `npm run codegen` and commit the result.');
  process.exit(1);
}
const access = path.join(root, 'codegen', 'operation-access.ts');
if (!fs.existsSync(access) || fs.readFileSync(access, 'utf8') !== require('./access').render()) {
  console.error('codegen/operation-access.ts is out of date with openapi.yaml: run `npm run codegen` and commit the result.');
  process.exit(1);
}
console.log('codegen/api-types.ts and codegen/operation-access.ts match openapi.yaml');
