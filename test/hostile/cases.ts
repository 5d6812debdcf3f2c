/**
 * Hostile templates, each with the answer the service must give and how
 * long it may take. Shared by the default suite (short limits) and the
 * nightly set (the default 10 s limit and 2 GiB cap).
 */

export interface HostileCase {
  name: string;
  template: string;
  /** The status the API's error table names for what this template does. */
  status: number;
  /** The error message, when the status is an error. */
  error?: RegExp;
}

const TIMEOUT = /^Template compilation exceeded the [\d.]+ second limit$/;
const MEMORY = /^Template compilation exceeded the memory limit$/;
/** A runaway stopped by either limit: which one comes first depends on the machine. */
export const EITHER_LIMIT = /^Template compilation exceeded the (memory limit|[\d.]+ second limit)$/;

export const LAYOUT_NEVER_CONVERGES = '#context { let n = counter(page).final().first(); for i in range(n + 1) [x #pagebreak()] }';

export const COMPUTE_CASES: HostileCase[] = [
  { name: 'endless while loop (constant condition)', template: '#while true {}', status: 400, error: /condition is always true/ },
  {
    name: 'endless while loop (changing state)',
    template: '#let i = 0\n#while i >= 0 { i += 1 }',
    status: 400,
    error: /^Typst error on line 2, column \d+: loop seems to be infinite/,
  },
  {
    name: 'endless for loop (10^10 iterations)',
    template: '#for i in range(100000) { for j in range(100000) { } }',
    status: 422,
    error: TIMEOUT,
  },
  { name: 'deep recursion', template: '#let f(n) = f(n + 1)\n#f(0)', status: 400, error: /maximum function call depth exceeded/ },
  {
    name: 'exponential recursion, memoized by Typst',
    template: '#let f(n) = if n == 0 { 1 } else { f(n - 1) + f(n - 1) - f(n - 1) }\n#f(60)',
    status: 200,
  },
  {
    name: 'exponential recursion, every call distinct (2^40 calls)',
    template: '#let g(n, path) = if n == 0 { 0 } else { g(n - 1, path + (0,)) + g(n - 1, path + (1,)) }\n#g(40, ())',
    status: 422,
    error: EITHER_LIMIT,
  },
  { name: 'range(1e9) (a float)', template: '#range(1e9).len()', status: 400, error: /expected integer, found float/ },
  { name: 'range(1000000000)', template: '#range(1000000000).len()', status: 422, error: MEMORY },
  { name: 'giant string repetition (4 × 10^9 characters)', template: '#(("x" * 1000) * 4000000).len()', status: 422, error: MEMORY },
  {
    // One allocation of 10^12 bytes: glibc's malloc refuses it at once, an allocator that reserves it would have
    // the string filled a page at a time until the memory cap, which under load can come after the time limit.
    name: 'string repetition of 10^12 bytes (one allocation)',
    template: '#("x" * 1000000000000).len()',
    status: 422,
    error: EITHER_LIMIT,
  },
  {
    name: 'string doubling to 2^40 characters',
    template: '#let s = "x"\n#for i in range(40) { s = s + s }\n#s.len()',
    status: 422,
    error: EITHER_LIMIT,
  },
  { name: 'huge array', template: '#let a = ()\n#for i in range(100000000) { a.push(i) }\n#a.len()', status: 422, error: MEMORY },
  {
    name: 'huge dictionary',
    template: '#let d = (:)\n#for i in range(100000000) { d.insert(str(i), i) }\n#d.len()',
    status: 422,
    error: MEMORY,
  },
  { name: 'giant table (10^7 cells)', template: '#table(columns: 10, ..range(10000000).map(str))', status: 422, error: EITHER_LIMIT },
  { name: '100,000-page document (blank pages)', template: '#for i in range(100000) [#pagebreak()]', status: 200 },
  {
    name: 'layout that never converges',
    // Each layout pass adds a page, so the page count it reads is never final.
    template: LAYOUT_NEVER_CONVERGES,
    status: 200,
  },
  { name: '#panic', template: '#panic("stop here")', status: 400, error: /^Typst error on line 1, column 2: panicked with: "stop here"$/ },
  // Deep nesting overflowed the default 8 MiB stack and crashed the worker; on the workers' 64 MiB
  // stack (process-limits.ts) Typst reaches its own depth limits, or compiles them, up to the depths
  // docs/engine-crashes.md gives (engine-crashes.test.ts has what crashes past them).
  { name: '10,000 nested parentheses', template: `#${'('.repeat(10_000)}1${')'.repeat(10_000)}`, status: 200 },
  {
    name: 'box nested 100,000 deep',
    template: '#let c = [x]\n#for i in range(100000) { c = box(c) }\n#c',
    status: 400,
    error: /^Typst error on line 2, column \d+: maximum layout depth exceeded; hint: try to reduce the amount of nesting in your layout$/,
  },
  {
    name: 'emph nested 100,000 deep',
    template: '#let c = [x]\n#for i in range(100000) { c = emph(c) }\n#c',
    status: 400,
    error: /^Typst error on line 2, column \d+: maximum show rule depth exceeded/,
  },
];
