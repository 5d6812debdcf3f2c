/**
 * An `Expect` header other than `100-continue` makes Node's HTTP server
 * answer 417 on its own, outside the API's error table. The API has no
 * expectation to meet, so such a request is handled like any other.
 */
import type { Server } from 'node:http';

export function ignoreUnknownExpectations(server: Server): void {
  server.on('checkExpectation', (request, response) => server.emit('request', request, response));
}
