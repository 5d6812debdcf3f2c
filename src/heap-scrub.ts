/**
 * Node's HTTP parser makes a JavaScript string of every header it reads:
 * `Authorization: Bearer <key>` among them, a wrong key too, whatever the
 * API then does with it. The service cannot wipe a string; V8 frees it
 * when it collects garbage, and by default leaves its bytes where they
 * were. A request that lives through two young-generation collections
 * (one waiting on a compile, say) has its strings moved to the old
 * generation, whose freed memory is only reused, never cleared: measured,
 * a key used once was still in the server's memory 32 s and 40 requests
 * later.
 *
 * A connection kept alive also keeps its last request, head and all: Node's
 * parser refers to it until the next request comes. So once the answer is
 * done, the request lets go of its head (forgetHead).
 *
 * V8 fills the memory it frees with zeros (`--clear-free-memory`), and
 * once the server has answered and then been idle for HEAP_SCRUB_AFTER_MS
 * it collects all its garbage (a full collection; its cost is measured in
 * the bench). While requests keep coming no collection is forced: each
 * gap shorter than that delays it, and V8's own collections clear what
 * they free.
 */
import type { IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Idle time after the last answer before the full collection: inside the promise's 300 ms, past the gaps of a steady client. */
const HEAP_SCRUB_AFTER_MS = 50;

export class HeapScrub {
  private readonly collect: () => void;
  private timer: NodeJS.Timeout | undefined;

  constructor() {
    setFlagsFromString('--clear-free-memory');
    // V8's collector, for this module alone: the flag is set only while a fresh context fetches `gc`.
    setFlagsFromString('--expose-gc');
    this.collect = runInNewContext('gc') as () => void;
    setFlagsFromString('--no-expose-gc');
  }

  /** After an answer: the full collection runs once the server has been idle for HEAP_SCRUB_AFTER_MS. */
  afterAnswer = (): void => {
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(this.collect, HEAP_SCRUB_AFTER_MS).unref();
  };
}

/**
 * Drops a request's header strings once its answer is done: what reads them
 * (the log line, the metrics) has run by then, at the response's 'finish'.
 */
export function forgetHead(request: IncomingMessage): void {
  request.rawHeaders.length = 0;
  request.headers = {};
  request.rawTrailers.length = 0;
}
