/**
 * The environment variables that set a worker's allocator: the fill of
 * freed memory (retention/freed-memory-fill.ts), and glibc's malloc asking
 * the kernel for transparent huge pages (`glibc.malloc.hugetlb=1`: its heap
 * and its large blocks advised with MADV_HUGEPAGE, so the kernel's
 * default "madvise" mode gives them 2 MiB pages).
 *
 * Why huge pages: on a virtual machine shared with others, touching a
 * 4 KiB page again costs more the longer since its last touch (the address
 * translation, cold in every cache): 1,024 pages once each, 0.01 ms right
 * after, 6 to 14 ms 250 ms later; in 2 MiB pages, 0.03 ms
 * (docs/performance.md). A compile walks hundreds of MiB of the compiler's
 * memory. Paired against the same build without it (one worker each,
 * blocks taking turns), the workers' CPU per document was 1 to 6 % lower
 * on every workload measured but the 0.14 letter (the same), for the same
 * resident memory within 1 %. Where the kernel has no transparent huge
 * pages, or they are off, glibc asks for nothing.
 *
 * The server does not ask: its malloc holds little, and its cost is in
 * V8's heap and code, which V8 maps in pages of its own.
 */
import { freedMemoryFill } from '../retention/freed-memory-fill.js';

const HUGE_PAGES_TUNABLE = 'glibc.malloc.hugetlb=1';

export function workerAllocatorEnv(): Record<string, string> {
  const fill = freedMemoryFill().env;
  const tunables = fill.GLIBC_TUNABLES ? `${fill.GLIBC_TUNABLES}:${HUGE_PAGES_TUNABLE}` : HUGE_PAGES_TUNABLE;
  return { ...fill, GLIBC_TUNABLES: tunables };
}
