/**
 * Settings of the server process that take effect only from its start:
 *
 * - the allocator fills every block freed (freed-memory-fill.ts);
 * - V8 leaves more room before a full garbage collection (HEAP_FLAG).
 *
 * A server started without them replaces itself with itself started with
 * them (`process.execve`: same process id, arguments and environment),
 * before it does anything else. Where `process.execve` is missing (not
 * Linux), it goes on as it was started.
 */
import { freedMemoryFill, startedWithFill } from './freed-memory-fill.js';

/**
 * Node's HTTP parser hands a body over as chunks that are each a new buffer
 * (about 9 MB of them for a 9 MB body; they are wiped as received, see
 * request/receive.ts). V8 counts that memory against the old generation's
 * limit, which for the server's heap of about 15 MB it keeps near 20 MB: so
 * nearly every large request started a full collection of the whole heap,
 * 10 to 15 ms of CPU. With room for 64 MiB one comes every five or so large
 * requests (W4 server CPU 27 -> 20 ms per request), and the server's
 * resident memory levels off about 45 MiB higher. A size the operator gives
 * on the command line stands (NODE_OPTIONS cannot carry this flag).
 */
const HEAP_FLAG = '--initial-old-space-size';
const HEAP_MIB = 64;

export function ensureStartSettings(): void {
  if (typeof process.execve !== 'function' || process.platform !== 'linux') return;
  const hasFill = startedWithFill(process.env);
  const hasHeapFlag = process.execArgv.some((arg) => arg.startsWith(`${HEAP_FLAG}=`));
  if (hasFill && hasHeapFlag) return;
  const env = hasFill ? process.env : withFill(process.env);
  const heap = hasHeapFlag ? [] : [`${HEAP_FLAG}=${HEAP_MIB}`];
  process.execve(process.execPath, [process.execPath, ...heap, ...process.execArgv, ...process.argv.slice(1)], env);
}

/** Each list the operator set keeps its entries, after ours (our realloc must come before jemalloc). */
const SEPARATORS: Record<string, string> = { GLIBC_TUNABLES: ':', LD_PRELOAD: ':', MALLOC_CONF: ',' };

function withFill(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const merged = { ...env };
  for (const [name, value] of Object.entries(freedMemoryFill().env)) {
    const given = env[name];
    merged[name] = given ? `${value}${SEPARATORS[name]}${given}` : value;
  }
  return merged;
}
