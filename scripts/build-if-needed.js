// Builds dist/ when it is missing or older than any source file, so `npm start` works on a fresh clone.
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const marker = path.join(root, 'dist', 'apps', 'agent-runtime', 'src', 'main.js');

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(full));
    else if (/\.(ts|mts|tsx|css|html)$/.test(entry.name))
      newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

const sources = ['apps', 'libs', 'migrations', 'bench', 'eval', 'test/support']
  .map((d) => path.join(root, d))
  .filter((d) => fs.existsSync(d));
const built = fs.existsSync(marker) ? fs.statSync(marker).mtimeMs : 0;
if (!built || sources.some((d) => newestMtime(d) > built)) {
  console.log('[build-if-needed] compiling TypeScript to dist/ ...');
  execSync('npm run build', { cwd: root, stdio: 'inherit' });
}
