/**
 * The service's logger. On a terminal, readable lines (pino-pretty, written
 * at once so they interleave with the start-up banner); otherwise JSON
 * lines, written in batches rather than one write per request
 * (log-output.ts), and what is left as the process exits.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { LogOutput } from './log-output.js';

export function createLogger(level: string, terminal = Boolean(process.stdout.isTTY)): Logger {
  const base = { service: 'typst-pdf-service' };
  if (terminal) {
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
