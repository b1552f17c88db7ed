import { Logger } from '@nestjs/common';
import { parseEnvNamespace } from '@agent/config';
import { createApp } from './bootstrap';
import { ShutdownState } from './health/shutdown-state';
import { startDemoModel } from './quick-start/demo-model.start';

async function main(): Promise<void> {
  // Before the app reads its environment: with no model configured, the quick start's demo model (ADR 0012).
  const demoModel = await startDemoModel();
  const app = await createApp().catch(async (error: unknown) => {
    await demoModel?.stop();
    throw error;
  });
  const env = parseEnvNamespace('app');
  const shutdown = app.get(ShutdownState);
  const logger = new Logger('Main');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Readiness fails first; in-flight turns finish while the server stops accepting; then exit.
    shutdown.shuttingDown = true;
    logger.log(`${signal} received: draining`);
    const force = setTimeout(() => {
      logger.error('shutdown grace period exceeded; exiting');
      process.exit(1);
    }, env.SHUTDOWN_GRACE_MS);
    force.unref();
    app
      .close()
      .then(() => demoModel?.stop())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error(`shutdown failed: ${String(error)}`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await app.listen({ port: env.PORT, host: '0.0.0.0' });
  logger.log(
    `agent-runtime listening on port ${env.PORT} (started in ${Math.round(process.uptime() * 1000)} ms)`,
  );
}

main().catch((error: unknown) => {
  // Start-up errors (bad env, bad YAML, database) are printed plainly and the process fails.
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
