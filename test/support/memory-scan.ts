/**
 * Looks for bytes in the memory of a running process, the way an attacker
 * with a core dump or `/proc/PID/mem` would: every readable mapping listed
 * in `/proc/PID/maps`, read through `/proc/PID/mem`. Used to check that a
 * request's content is gone from the server and its workers.
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

const CHUNK = 8 * 1024 * 1024;

/**
 * Every place in `pid`'s readable memory where one of `needles` occurs.
 * Mappings that vanish while being read are skipped.
 */
export function scanMemory(pid: number, needles: Buffer[]): Hit[] {
  const hits: Hit[] = [];
  const overlap = Math.max(...needles.map((n) => n.length)) - 1;
  const fd = openSync(`/proc/${pid}/mem`, 'r');
  const buffer = Buffer.alloc(CHUNK + overlap);
  try {
    for (const mapping of readableMappings(pid)) {
      for (let at = mapping.start; at < mapping.end; at += CHUNK) {
        const length = Math.min(CHUNK + overlap, mapping.end - at);
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
            if (i < CHUNK || at + CHUNK >= mapping.end) {
              hits.push({ needle: index, address: at + i, mapping, before: Buffer.from(view.subarray(Math.max(0, i - BEFORE_HIT), i)) });
            }
          }
        });
      }
    }
  } finally {
    closeSync(fd);
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
