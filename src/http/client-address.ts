/**
 * The client address a request is counted under when it carries no valid
 * key. Fastify gives `request.ip`: the socket's peer, or, when TRUST_PROXY
 * names the proxy in front, the address that proxy put in X-Forwarded-For.
 * Here it is reduced to what one client controls: an IPv4 address, or the
 * /64 network of an IPv6 address (one host usually holds a whole /64).
 */
import { isIPv4, isIPv6 } from 'node:net';

/** The eight 16-bit groups of an IPv6 address, or undefined if it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  if (!isIPv6(address)) return undefined;
  let text = address.split('%')[0]!; // drop a zone index
  // A trailing dotted IPv4 part counts as two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - front.length - back.length }, () => 0);
  return [...front, ...zeros, ...back];
}

/** The counting identity of a client address: `a.b.c.d`, or `xxxx:xxxx:xxxx:xxxx::/64`. */
export function clientBucket(address: string | undefined): string {
  if (!address) return 'unknown';
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
  if (!groups) return 'unknown';
  // ::ffff:a.b.c.d is an IPv4 client on a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}
