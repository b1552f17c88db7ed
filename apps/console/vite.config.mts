import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/** The operator console: built into dist/console, which the app serves at /console/. */
export default defineConfig({
  root: here,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: fileURLToPath(new URL('../../dist/console', import.meta.url)),
    emptyOutDir: true,
    // ECharts is most of the bundle; it is loaded only with the statistics view.
    chunkSizeWarningLimit: 800,
    rolldownOptions: {
      // TanStack Query marks its modules "use client" for server-component frameworks; a browser bundle has no use for it.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  server: {
    // `npx vite -c apps/console/vite.config.mts` against a locally running app on PORT (default 3000).
    proxy: Object.fromEntries(
      ['/v1', '/docs'].map((path) => [path, `http://127.0.0.1:${process.env.PORT ?? '3000'}`]),
    ),
  },
});
