/**
 * Node's HTTP parsers copy a part of a request's head that came in more than
 * one read (the URL, a header's name or value, a trailer) into native memory
 * of their own, and free a copy only when the same parser next starts a
 * message or reuses that header's slot, or is destroyed. Node keeps up to
 * 1,000 parsers of ended connections for reuse, so the last such head (a key,
 * a query) stayed in the server for as long as its parser waited, never
 * freed and so never filled. Found with markers 300 ms after a head cut in
 * two then a reset, a head never finished (its timeout), a chunked body's
 * trailer and a CONNECT (each of them gone with no reuse).
 *
 * With no reuse, each connection's parser is destroyed once the connection
 * has ended, and what it copied is freed, so filled (freed-memory-fill.ts),
 * for a new parser per connection. Node has no setting for this: the pool
 * is reached in the module that owns it (`_http_common`, in Node 22 and 24).
 */
import { createRequire } from 'node:module';

/** Makes the HTTP server destroy each connection's parser once done; false where this Node.js has no such pool. */
export function stopParserReuse(): boolean {
  const common = createRequire(import.meta.url)('_http_common') as { parsers?: { max?: unknown } };
  if (typeof common.parsers?.max !== 'number') return false;
  common.parsers.max = 0;
  return true;
}
