/**
 * When the scrubs that follow answers run: the collection of the server's
 * heap (heap-scrub.ts) and the scrub of Node's read buffers
 * (read-buffer-scrub.ts). Both run QUIET_MS after the last answer unless a
 * request that came after the last answered one is in flight; then the
 * read buffers' waits for that request's answer, up to IN_FLIGHT_WAIT_MS
 * after the last answer, and the heap's for quiet. While requests keep coming neither is
 * needed: each read replaces the last, and the next quiet spell's
 * collection clears what V8's own collections freed meanwhile. A request
 * that came before the answered one (a long compile, a client that
 * trickles its body) holds neither back, and the heap's collection is then
 * of the young generation alone (heap-scrub.ts): waiting for it once let
 * one slow client keep other clients' heads and bodies (their keys among
 * them) in the server, found by a hostile review.
 *
 * They share one timer, which a request arriving never clears. Node keeps
 * a single libuv timer for all of its timers and moves it only earlier: a
 * timeout cleared leaves it set for the old deadline, and the server wakes
 * then to find nothing due, and a server that slept through a compile
 * wakes with its caches cold (a bare `node:http` server that waits 10 ms
 * before it answers costs 0.2 ms of CPU a request more than one that does
 * not). With a timer of each scrub's own, armed at every answer and
 * cleared or moved by the next request, timers woke the server 29 times in
 * 19 six-page reports sent one after another (16 with this one, the pool's
 * first look counted in both). Here a deadline is only ever moved earlier;
 * one that comes while a later request is in flight is that request's
 * answer's to set again, and it is the only wake.
 */

/** Time after the last answer: well inside the promise's "at the answer" (scanned 300 ms after it). */
const QUIET_MS = 100;
/**
 * While a request that came after the last answered one is in flight, the
 * read buffers' scrub waits for its answer, up to this long after the last
 * answer: a compile longer than QUIET_MS sent right after an answer (a
 * 50-page report takes half a second) then costs no scrub of its own, and
 * a request whose body never comes holds it back no longer than this.
 */
const IN_FLIGHT_WAIT_MS = 1000;
/** libuv counts whole milliseconds and its clock may lag `performance.now()` by one: a timer may run up to 2 ms before its deadline as the latter sees it. */
const EARLY_MS = 3;

export interface Scrubs {
  /** Whether a request that came after the last answered one is in flight: not yet answered, nor abandoned. */
  laterInFlight(): boolean;
  /** Runs QUIET_MS after the last answer: the read buffers' scrub and the heap's collection. */
  quiet(): void;
  /** Runs IN_FLIGHT_WAIT_MS after the last answer with a later request still in flight: the read buffers' scrub. */
  overdue(): void;
}

let scrubs: Scrubs | undefined;
let timer: NodeJS.Timeout | undefined;
/** When the timer is due (performance.now()), while it is armed. */
let dueAt = Number.POSITIVE_INFINITY;
/** When the last answer (or closed connection, or worker result) asked for the scrubs, while they have not run since. */
let askedAt: number | undefined;

/** What runs; until it is set, scrubAfterAnswer() does nothing. */
export function setScrubs(what: Scrubs): void {
  scrubs = what;
}

/** When the scrubs asked for at `asked` are due: QUIET_MS after it, or IN_FLIGHT_WAIT_MS while a later request is in flight. */
function dueAfter(asked: number, later: boolean): number {
  return asked + (later ? IN_FLIGHT_WAIT_MS : QUIET_MS);
}

/** After every answer, closed connection and worker result (once its request no longer counts as in flight). */
export function scrubAfterAnswer(): void {
  if (!scrubs) return;
  askedAt = performance.now();
  // No request can have come after this answer yet.
  armBy(askedAt + QUIET_MS);
}

/** Makes the timer run by `at`: a timer due sooner is left as it is (it sets itself again when it runs). */
function armBy(at: number): void {
  if (timer !== undefined && dueAt <= at) return;
  clearTimeout(timer);
  dueAt = at;
  timer = setTimeout(run, Math.max(Math.ceil(at - performance.now()), 0)).unref();
}

function run(): void {
  timer = undefined;
  dueAt = Number.POSITIVE_INFINITY;
  if (askedAt === undefined || !scrubs) return;
  const later = scrubs.laterInFlight();
  const due = dueAfter(askedAt, later);
  // Not due yet: armed by an earlier answer than the last, or waiting on a later request.
  if (performance.now() < due - EARLY_MS) {
    armBy(due);
    return;
  }
  askedAt = undefined;
  // With a later request in flight the heap's collection waits for quiet: its answer asks again.
  if (later) scrubs.overdue();
  else scrubs.quiet();
}
