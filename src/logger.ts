/**
 * The service's logger. On a terminal, readable lines (pino-pretty, written
 * at once so they interleave with the start-up banner); otherwise JSON
 * lines, written in batches (at most 4 KiB or 100 ms apart) rather than one
 * write per request. pino flushes what is left on exit.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export function createLogger(level: string, terminal = Boolean(process.stdout.isTTY)): Logger {
  const base = { service: 'typst-pdf-service' };
  if (terminal) {
    return pino({ level, base }, pretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }));
  }
  return pino({ level, base }, pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 }));
}
