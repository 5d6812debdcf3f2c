/**
 * The floor: the same compile the service does, done directly with the
 * engine in one process, no HTTP and no IPC. `engine.clean()` evicts the
 * compiler's cache and drops the job's files after every job, as a worker does.
 *
 * It runs in a process of its own, with the workers' environment (no system
 * fonts), and stays up for the whole benchmark so that its measurements can
 * be interleaved with the service's: on a shared machine both then see the
 * same background load.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { checkBody } from '../src/bytes/json-check.js';
import type { BodyLayout } from '../src/bytes/layout.js';
import { TypstEngine } from '../src/render/engine.js';
import { loadFontCatalog } from '../src/render/fonts/catalog.js';
import { createSandbox, type Sandbox } from '../src/render/sandbox.js';
import { workerAllocatorEnv } from '../src/render/worker-allocator.js';
import { freedMemoryFill } from '../src/retention/freed-memory-fill.js';
import { ENGINE_IDS } from '../src/engines.js';
import { workloads, type Workload } from './workloads.js';

interface FloorRequest {
  id: Workload['id'];
  runs: number;
}

export interface FloorAnswer {
  id: Workload['id'];
  pages: number;
  pdfBytes: number;
  /** Milliseconds per render, in run order. */
  samples: number[];
  /** CPU milliseconds (user + system) per render, in run order. */
  cpuSamples: number[];
}

const SELF = fileURLToPath(import.meta.url);

export class FloorProcess {
  private constructor(
    private readonly child: ChildProcess,
    private readonly sandbox: Sandbox,
  ) {}

  /**
   * `bare`: without the workers' allocator settings (src/render/worker-allocator.ts); otherwise with
   * freed memory filled alone (src/retention/freed-memory-fill.ts), to tell what the fill costs.
   */
  static async start(options: { bare?: boolean } = {}): Promise<FloorProcess> {
    const sandbox = createSandbox(undefined);
    const bareEnv = { ...sandbox.env };
    for (const name of Object.keys(workerAllocatorEnv())) delete bareEnv[name];
    const env = options.bare ? bareEnv : { ...bareEnv, ...freedMemoryFill().env };
    const child = fork(SELF, ['--serve'], { env, execArgv: ['--expose-gc'], serialization: 'advanced' });
    await once(child, 'message');
    return new FloorProcess(child, sandbox);
  }

  async measure(id: Workload['id'], runs: number): Promise<FloorAnswer> {
    const answer = once(this.child, 'message') as Promise<[FloorAnswer | { error: string }]>;
    this.child.send({ id, runs } satisfies FloorRequest);
    const [result] = await answer;
    if ('error' in result) throw new Error(result.error);
    return result;
  }

  async stop(): Promise<void> {
    this.child.kill();
    await once(this.child, 'exit');
    this.sandbox.dispose();
  }
}

function checkedLayout(body: Buffer): BodyLayout {
  const check = checkBody(body);
  if (!check.ok) throw new Error('workload body does not pass the check');
  return check.layout;
}

/** Page objects in a PDF written by Typst. */
function pageCount(pdf: Buffer): number {
  return pdf.toString('latin1').match(/\/Type\s*\/Page\b/g)?.length ?? 0;
}

function serve(): void {
  const fonts = loadFontCatalog();
  const engines = new Map(ENGINE_IDS.map((id) => [id, new TypstEngine(id, { fonts })]));
  const list = workloads();
  // The server checks the body once; the floor compiles what a worker compiles.
  const layouts = new Map(list.map((w) => [w.id, checkedLayout(w.body)]));
  process.on('message', ({ id, runs }: FloorRequest) => {
    const workload = list.find((w) => w.id === id)!;
    // The engine the workload's body names: each is measured against its own floor.
    const engine = engines.get(workload.engine)!;
    const samples: number[] = [];
    const cpuSamples: number[] = [];
    let pages = 0;
    let pdfBytes = 0;
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const outcome = engine.render({ body: workload.body, layout: layouts.get(id)! });
      // A dropped 0.14 compiler is freed once collected, as in a worker (the floor runs with --expose-gc).
      if (engine.clean()) (globalThis as { gc?: () => void }).gc?.();
      const cpu = process.cpuUsage(cpu0);
      samples.push(performance.now() - t0);
      cpuSamples.push((cpu.user + cpu.system) / 1000);
      if (!outcome.ok) return process.send!({ error: `${id} failed to compile: ${outcome.failure.message}` });
      pages = pageCount(outcome.pdf);
      pdfBytes = outcome.pdf.length;
    }
    process.send!({ id, pages, pdfBytes, samples, cpuSamples } satisfies FloorAnswer);
  });
  process.send!('ready');
}

if (process.argv[1] === SELF && process.argv[2] === '--serve') serve();
