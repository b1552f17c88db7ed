// Builds what is missing or older than its sources, so `npm start` works on a fresh clone and after a pull
// without a manual build: the server (scripts/build.js, swc) and the operator console (vite).
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');
const { serverInputs } = require('./build');
const { ROOT } = require('./swc-options');

function builtAt(file) {
  return existsSync(file) ? statSync(file).mtimeMs : 0;
}

function isStale(output, inputs) {
  const built = builtAt(output);
  return !built || inputs.some((file) => statSync(file).mtimeMs > built);
}

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && !entry.parentPath.includes('node_modules'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Compiles the server to dist/ when a source is newer than the build (the test set-up runs the compiled entry points). */
function buildServerIfNeeded() {
  if (isStale(join(ROOT, 'dist', 'apps', 'agent-runtime', 'src', 'main.js'), serverInputs())) {
    execFileSync(process.execPath, [join(__dirname, 'build.js')], { cwd: ROOT, stdio: 'inherit' });
  }
}

module.exports = { buildServerIfNeeded };

if (require.main === module) {
  buildServerIfNeeded();
  const consoleDir = join(ROOT, 'apps', 'console');
  if (
    existsSync(consoleDir) &&
    isStale(join(ROOT, 'dist', 'console', 'index.html'), filesUnder(consoleDir))
  ) {
    console.log('[build] building the operator console');
    execFileSync('npm', ['run', '--silent', 'build:console'], { cwd: ROOT, stdio: 'inherit' });
  }
}
