/**
 * The business rules of an e-invoice, when the operator provides them
 * (EINVOICE_RULES), as the worker's job sees them: one synchronous call,
 * answered by the worker's rules thread (rules-thread.ts), which holds
 * SaxonJS and the compiled stylesheets in a V8 heap of its own.
 *
 * The call blocks the worker's main thread until the answer is on the port
 * (Atomics.wait on a shared word, then receiveMessageOnPort): a job runs
 * straight through, and the worker has nothing else to do meanwhile. Were
 * the thread to die mid-check, the worker would wait with its CPU time
 * still, and the pool replaces a busy worker whose CPU time stops growing
 * (render/pool.ts).
 */
import { once } from 'node:events';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { EinvoiceProfile } from '../api-values.js';
import type { RuleFile } from '../config.js';
import type { RuleOutcome, RulesAnswer, RulesCheck, RulesThreadData } from './rules-thread.js';

export type { RuleFailure, RuleOutcome } from './rules-thread.js';

/** The thread and its end of the channel, once its stylesheets have compiled. */
let thread: { port: MessagePort; signal: Int32Array } | undefined;
let loaded: RuleFile[] = [];

/** The answer the thread has put on the port, once `signal` says so; the signal is reset for the next. */
function answerOn(port: MessagePort, signal: Int32Array): RulesAnswer {
  Atomics.store(signal, 0, 0);
  const answer = receiveMessageOnPort(port)?.message as RulesAnswer | undefined;
  if (!answer) throw new Error('business rules thread answered nothing');
  return answer;
}

/** Starts the rules thread, which loads SaxonJS and compiles each stylesheet once; throws when one does not compile. */
export async function loadRules(rules: RuleFile[]): Promise<void> {
  if (rules.length === 0) return;
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const { port1: port, port2 } = new MessageChannel();
  const data: RulesThreadData = { rules, port: port2, signal: signal.buffer as SharedArrayBuffer };
  const worker = new Worker(new URL('./rules-thread.js', import.meta.url), { workerData: data, transferList: [port2] });
  // Its first message, on its own channel to the worker: ready, or why not.
  const [started] = (await Promise.race([once(worker, 'message'), once(worker, 'error'), once(worker, 'exit')])) as unknown[];
  if (started instanceof Error) throw started;
  const answer = started as RulesAnswer | number;
  if (typeof answer === 'number') throw new Error(`business rules thread exited with ${answer}`);
  if ('error' in answer) throw new Error(answer.error);
  // The thread lives as long as the worker, and does not keep it alive.
  worker.unref();
  port.unref();
  thread = { port, signal };
  loaded = rules;
}

/** Whether any stylesheet applies to `profile`. */
export const hasRules = (profile: EinvoiceProfile) => loaded.some((file) => file.profiles.includes(profile));

/**
 * Runs every stylesheet for `profile` on the XML (its UTF-8 bytes) in the
 * rules thread, and returns their failed asserts, sorted. The XML is copied
 * into a buffer handed to the thread, which wipes it once read.
 */
export function checkRules(xml: Uint8Array, profile: EinvoiceProfile): RuleOutcome {
  const { port, signal } = thread!;
  const copy = new Uint8Array(xml.length);
  copy.set(xml);
  const check: RulesCheck = { xml: copy.buffer, profile };
  port.postMessage(check, [copy.buffer]);
  Atomics.wait(signal, 0, 0);
  const answer = answerOn(port, signal);
  if ('outcome' in answer) return answer.outcome;
  throw new Error('error' in answer ? answer.error : 'business rules thread answered out of turn');
}
