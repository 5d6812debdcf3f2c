/**
 * When an answer is over, for all that lets go of a request then (its
 * holdings, its place in flight, the PDF its worker holds, the count of
 * answers held): the response's 'close' or its connection's, whichever
 * comes first.
 *
 * Node 24 closes every response of a connection that goes away. Node 22
 * does not close a pipelined response that was still waiting for the one
 * before it to be written: it never had the socket, and it emits neither
 * 'finish' nor 'close'. Its request stayed held, and in flight, for the life
 * of the process (found with two pipelined requests whose client left with
 * the first answer unread: test/retention.test.ts).
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What runs when each answer not yet over ends. */
const runsOf = new WeakMap<ServerResponse, (() => void)[]>();
/** The answers of each connection that are not over yet. */
const openOf = new WeakMap<Socket, Set<ServerResponse>>();

/** Whether `response` is over: closed or destroyed, or its connection is (a request made with `inject` has no real one). */
function ended(response: ServerResponse): boolean {
  return response.closed || response.destroyed || response.req.socket?.destroyed === true;
}

/** Runs `run` once `response` is over: at once if it is already. */
export function onAnswerEnd(response: ServerResponse, run: () => void): void {
  if (ended(response)) {
    run();
    return;
  }
  const runs = runsOf.get(response);
  if (runs) {
    runs.push(run);
    return;
  }
  runsOf.set(response, [run]);
  response.once('close', () => end(response));
  answersOf(response.req.socket).add(response);
}

/**
 * The set of `socket`'s answers not over yet, made with its 'close' listener on the first. (Its own function: a
 * listener made in onAnswerEnd kept that function's scope, the connection's first response among it, and with it its
 * request and URL, for as long as the connection stayed open.)
 */
function answersOf(socket: Socket): Set<ServerResponse> {
  const known = openOf.get(socket);
  if (known) return known;
  const answers = new Set<ServerResponse>();
  socket.once('close', () => {
    for (const answer of answers) end(answer);
  });
  openOf.set(socket, answers);
  return answers;
}

function end(response: ServerResponse): void {
  const runs = runsOf.get(response);
  if (!runs) return;
  runsOf.delete(response);
  openOf.get(response.req.socket)?.delete(response);
  for (const run of runs) run();
}
