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

/** The answers of each connection that have not ended yet, each with what runs when it does. */
const pendingOf = new WeakMap<Socket, Map<ServerResponse, (() => void)[]>>();

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
  const socket = response.req.socket;
  let pending = pendingOf.get(socket);
  if (!pending) {
    const made = new Map<ServerResponse, (() => void)[]>();
    pendingOf.set(socket, made);
    socket.once('close', () => {
      pendingOf.delete(socket);
      for (const response of [...made.keys()]) end(made, response);
    });
    pending = made;
  }
  let runs = pending.get(response);
  if (!runs) {
    const list: (() => void)[] = [];
    pending.set(response, list);
    const owner = pending;
    response.once('close', () => end(owner, response));
    runs = list;
  }
  runs.push(run);
}

function end(pending: Map<ServerResponse, (() => void)[]>, response: ServerResponse): void {
  const runs = pending.get(response);
  if (!runs) return;
  pending.delete(response);
  for (const run of runs) run();
}
