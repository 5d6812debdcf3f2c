/**
 * Resident memory of the service: the server process plus every worker
 * process it has at the moment of the sample (workers come and go as they
 * are recycled), read from /proc.
 */
import { readFileSync } from 'node:fs';
import { childPids } from '../test/support/service.js';

function rssKiB(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0; // exited between listing and reading
  }
}

export interface MemorySample {
  /** Responses received when the sample was taken. */
  requests: number;
  serverMiB: number;
  workersMiB: number;
  totalMiB: number;
  workers: number;
}

export function sampleMemory(serverPid: number, requests: number): MemorySample {
  const workers = childPids(serverPid);
  const serverMiB = rssKiB(serverPid) / 1024;
  const workersMiB = workers.reduce((sum, pid) => sum + rssKiB(pid), 0) / 1024;
  return { requests, serverMiB, workersMiB, totalMiB: serverMiB + workersMiB, workers: workers.length };
}
