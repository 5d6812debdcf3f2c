/**
 * Graceful shutdown on SIGTERM and SIGINT: readiness turns 503 at once,
 * the listener stops accepting, requests in flight finish (new ones on open
 * connections get 503), then the workers are ended and the process exits 0.
 * Past SHUTDOWN_TIMEOUT_MS the remaining compiles are cut off (503).
 * A second signal ends everything at once.
 */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { closeConnectionsOwingNothing } from './http/draining.js';
import type { RenderPool } from './render/pool.js';

export interface ShutdownParts {
  app: FastifyInstance;
  pool: RenderPool;
  logger: Logger;
  timeoutMs: number;
  /** Marks the service as closing (readiness and the draining hook read it). */
  beginClosing(): void;
  metricsServer?: Server;
}

const sleep = (ms: number) => new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ms).unref());

/** After the workers are ended, how long the cut-off responses get to be written. */
const FLUSH_MS = 1000;

export function handleShutdownSignals(parts: ShutdownParts): void {
  let started = false;

  const shutdown = async (signal: NodeJS.Signals) => {
    const { app, pool, logger } = parts;
    if (started) {
      logger.warn({ signal }, 'second signal: stopping now');
      await pool.close(0);
      process.exit(1);
    }
    started = true;
    parts.beginClosing();
    const inFlight = pool.stats().busy + pool.stats().queued;
    logger.info({ signal, inFlight, timeoutMs: parts.timeoutMs }, 'shutting down');
    if (parts.metricsServer) {
      parts.metricsServer.close();
      parts.metricsServer.closeAllConnections();
    }
    // Connections that owe no answer are closed now; the others close after their last answer (draining.ts).
    closeConnectionsOwingNothing(app);
    const closed = app.close().then(() => 'closed' as const);
    if ((await Promise.race([closed, sleep(parts.timeoutMs)])) === 'timeout') {
      logger.warn({ busy: pool.stats().busy }, 'shutdown deadline passed; ending compiles in flight');
    }
    await pool.close(0);
    await Promise.race([closed, sleep(FLUSH_MS)]);
    logger.info('stopped');
    process.exit(0);
  };

  process.on('SIGTERM', (signal) => void shutdown(signal));
  process.on('SIGINT', (signal) => void shutdown(signal));
}

/**
 * Signals that come while the service starts, before handleShutdownSignals:
 * the first is held and acted on once the service has started, so that the
 * stop is the usual one and leaves nothing behind (its workers, the copy of
 * PACKAGE_PATH); before, it ended the process by the signal. A second one
 * ends the process at once (exit 1). `release`, called once
 * handleShutdownSignals has added its listeners (so that a signal Node has
 * received but not yet dispatched still finds one), stops holding them and
 * returns the one held, if any.
 */
export function holdStopSignals(): { release(): NodeJS.Signals | undefined } {
  let held: NodeJS.Signals | undefined;
  const hold = (signal: NodeJS.Signals) => {
    if (held) process.exit(1);
    held = signal;
  };
  process.on('SIGTERM', hold);
  process.on('SIGINT', hold);
  return {
    release() {
      process.off('SIGTERM', hold);
      process.off('SIGINT', hold);
      return held;
    },
  };
}
