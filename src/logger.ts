/**
 * The service's logger. On a terminal, readable lines (pino-pretty, written
 * at once so they interleave with the start-up banner); otherwise JSON
 * lines, written in batches rather than one write per request
 * (log-output.ts), and what is left as the process exits.
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type pinoPretty from 'pino-pretty';
import { LogOutput } from './log-output.js';
import { SERVICE_NAME } from './version.js';

export function createLogger(level: string, terminal = Boolean(process.stdout.isTTY)): Logger {
  const base = { service: SERVICE_NAME };
  if (terminal) {
    // Loaded for a terminal alone: elsewhere (a container, a pipe) it would be 0.33 MB of the server's heap for nothing.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof pinoPretty;
    return pino({ level, base }, pretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }));
  }
  // Reading process.stdout makes fd 1 non-blocking when it is a pipe or a socket, as LogOutput needs.
  void process.stdout;
  const output = new LogOutput(
    1,
    (count) =>
      `${JSON.stringify({ level: 40, time: Date.now(), ...base, dropped: count, msg: 'log lines dropped: the reader of stdout did not keep up' })}\n`,
  );
  process.once('exit', () => output.flushAtExit());
  return pino({ level, base }, output);
}
