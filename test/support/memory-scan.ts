/**
 * Looks for bytes in the memory of a running process, the way an attacker
 * with a core dump or `/proc/PID/mem` would: every readable mapping listed
 * in `/proc/PID/maps`, read through `/proc/PID/mem`, each page the process
 * could have written (rangesToRead). Used to check that a request's content
 * is gone from the server and its workers.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

export interface Mapping {
  start: number;
  end: number;
  perms: string;
  name: string;
}

/** The readable mappings of `pid` (kernel pages that cannot be read through /proc/PID/mem left out). */
export function readableMappings(pid: number): Mapping[] {
  return readFileSync(`/proc/${pid}/maps`, 'latin1')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [range, perms, , , , ...rest] = line.split(/\s+/);
      const [start, end] = range!.split('-').map((hex) => parseInt(hex, 16)) as [number, number];
      return { start, end, perms: perms!, name: rest.join(' ') || '[anon]' };
    })
    .filter((m) => m.perms.startsWith('r') && m.name !== '[vvar]' && m.name !== '[vsyscall]' && m.name !== '[vvar_vclock]');
}

export interface Hit {
  needle: number;
  address: number;
  mapping: Mapping;
  /** Up to BEFORE_HIT bytes just before the hit (fewer at the start of a chunk), to tell what holds it. */
  before: Buffer;
}

const BEFORE_HIT = 32;

/** Read and searched a chunk at a time; 1 MiB stays in a core's cache while every needle is looked for in it. */
const CHUNK = 1024 * 1024;
const PAGE = 4096;

/**
 * The parts of a mapping to read: the pages the process has written, and
 * that it could hold a request in. Those are, from `/proc/PID/pagemap`
 * (8 bytes a page): pages swapped out (bit 62), and resident pages of its
 * own (bit 63) that are not pages of a file (bit 61). Left out are pages
 * never written or given back, which read as zeros (V8 and the engines
 * reserve about 1 GiB a process and use 20 to 70 MiB), and the page cache's
 * copies of the files the process maps unchanged (its code, libraries,
 * fonts: 100 to 200 MiB a process), which hold what the files hold. A
 * shared mapping is read whole. Each range is widened by `margin` bytes on
 * either side, so that a needle that runs into a page left out is still
 * found.
 */
function rangesToRead(pagemap: number | undefined, mapping: Mapping, margin: number): Array<[number, number]> {
  if (pagemap === undefined || mapping.perms[3] === 's') return [[mapping.start, mapping.end]];
  const pages = (mapping.end - mapping.start) / PAGE;
  const ranges: Array<[number, number]> = [];
  const entries = Buffer.alloc(Math.min(pages, 65536) * 8);
  for (let first = 0; first < pages; first += entries.length / 8) {
    const count = Math.min(entries.length / 8, pages - first);
    const read = readSync(pagemap, entries, 0, count * 8, (mapping.start / PAGE + first) * 8);
    for (let i = 0; i < read / 8; i++) {
      const flags = entries[i * 8 + 7]!;
      const swapped = (flags & 0x40) !== 0;
      const ownResident = (flags & 0x80) !== 0 && (flags & 0x20) === 0;
      if (!swapped && !ownResident) continue;
      const start = Math.max(mapping.start, mapping.start + (first + i) * PAGE - margin);
      const end = Math.min(mapping.end, mapping.start + (first + i + 1) * PAGE + margin);
      const last = ranges[ranges.length - 1];
      if (last && start <= last[1]) last[1] = end;
      else ranges.push([start, end]);
    }
  }
  return ranges;
}

/**
 * Every place in `pid`'s readable memory where one of `needles` occurs.
 * Mappings that vanish while being read are skipped. `everyPage` reads
 * every page of every mapping, as `/proc/PID/mem` has them (the check of
 * the faster way above, in test/memory-scan.test.ts).
 */
export function scanMemory(pid: number, needles: Buffer[], options: { everyPage?: boolean } = {}): Hit[] {
  const hits: Hit[] = [];
  const overlap = Math.max(...needles.map((n) => n.length)) - 1;
  const fd = openSync(`/proc/${pid}/mem`, 'r');
  const pagemap = options.everyPage ? undefined : openSync(`/proc/${pid}/pagemap`, 'r');
  const buffer = Buffer.alloc(CHUNK + overlap);
  try {
    for (const mapping of readableMappings(pid)) {
      let ranges: Array<[number, number]>;
      try {
        ranges = rangesToRead(pagemap, mapping, overlap);
      } catch {
        continue; // unmapped meanwhile
      }
      for (const [start, end] of ranges) {
        for (let at = start; at < end; at += CHUNK) {
          const length = Math.min(CHUNK + overlap, end - at);
          let read: number;
          try {
            read = readSync(fd, buffer, 0, length, at);
          } catch {
            break; // unmapped meanwhile, or a guard region
          }
          const view = buffer.subarray(0, read);
          needles.forEach((needle, index) => {
            for (let i = view.indexOf(needle); i !== -1; i = view.indexOf(needle, i + 1)) {
              // A match inside the overlap is found again by the next chunk.
              if (i < CHUNK || at + CHUNK >= end) {
                hits.push({ needle: index, address: at + i, mapping, before: Buffer.from(view.subarray(Math.max(0, i - BEFORE_HIT), i)) });
              }
            }
          });
        }
      }
    }
  } finally {
    closeSync(fd);
    if (pagemap !== undefined) closeSync(pagemap);
  }
  return hits;
}

/** A text as it would sit in memory: UTF-8 (C, Rust, Buffers, one-byte V8 strings) and UTF-16LE (two-byte V8 strings). */
export function encodings(text: string): Buffer[] {
  return [Buffer.from(text, 'utf8'), Buffer.from(text, 'utf16le')];
}

/**
 * Where a hit sits, for a failure's message: the mapping's range and size, and the bytes just before the hit
 * (not the marker itself), which tell a V8 string's header from a C buffer or WebAssembly memory.
 */
export function describeHit({ address, mapping, before }: Hit): string {
  const size = ((mapping.end - mapping.start) / 1024).toFixed(0);
  return `at ${address.toString(16)} in ${mapping.name} ${mapping.start.toString(16)}-${mapping.end.toString(16)} (${size} KiB), after ${before.toString('hex')}`;
}
