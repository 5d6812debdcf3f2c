/**
 * The service's logger. On a terminal, readable lines (pino-pretty, written
 * at once so they interleave with the start-up banner); otherwise JSON
 * lines, written in batches (4 KiB, or what is there 100 ms after a line
 * that found nothing waiting) rather than one write per request. pino
 * flushes what is left on exit.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

/** The longest a line waits in the batch. */
const FLUSH_AFTER_MS = 100;

export function createLogger(level: string, terminal = Boolean(process.stdout.isTTY)): Logger {
  const base = { service: 'typst-pdf-service' };
  if (terminal) {
    return pino({ level, base }, pretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }));
  }
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  // A flush is timed from the line that starts a batch, not on a fixed period: sonic-boom's periodicFlush
  // wakes the process (and a libuv thread, for an empty write) ten times a second, idle or not, which cost
  // the server about 0.4 ms of CPU a wake, 2.4 ms for a document that compiles in 0.6 s. A flush asked for
  // while a write is going out does nothing; the lines that came meanwhile get a wait of their own once that
  // write ends ('drain'), so none is left waiting for the next line.
  let unwritten = 0;
  let flushDue = false;
  const flushSoon = () => {
    if (flushDue || unwritten <= 0) return;
    flushDue = true;
    setTimeout(() => {
      flushDue = false;
      if (unwritten <= 0) return;
      try {
        destination.flush();
      } catch {
        // The stream was closed (the process is ending): pino has flushed what it could.
      }
    }, FLUSH_AFTER_MS).unref();
  };
  destination.on('write', (bytes: number) => (unwritten -= bytes));
  destination.on('drain', flushSoon);
  const streamWrite = (line: string) => {
    unwritten += Buffer.byteLength(line);
    flushSoon();
    return line;
  };
  return pino({ level, base, hooks: { streamWrite } }, destination);
}
