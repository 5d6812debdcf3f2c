/**
 * `npm run test:container`: builds the Dockerfile's image, starts it, and
 * checks it as a deployment would use it: the report and the letter (with its
 * asset) render through it into PDFs that parse, it runs as the unprivileged
 * `node` user with core dumps off on a read-only root file system, its
 * HEALTHCHECK passes, and SIGTERM lets a compile in flight answer 200 before
 * the container exits 0. Prints the image size and the time of each step.
 *
 * Needs podman and runc, and root. The base image comes from a registry where
 * one is reachable; otherwise scripts/container-base.sh makes a local stand-in
 * of the same name first. The container shares the host's network and the
 * service listens on 127.0.0.1 only, on a free port. Its container and image
 * are removed on exit, on failure and on Ctrl-C; every step has a time limit.
 * CONTAINER_TEST_IMAGE=<image> tests an image built before instead (and keeps it).
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parsePdf } from './support/pdf.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE_IMAGE = 'docker.io/library/node:24-bookworm-slim';
/** An image built before (kept afterwards), or the one this run builds (removed afterwards). */
const GIVEN_IMAGE = process.env.CONTAINER_TEST_IMAGE;
const TAG = GIVEN_IMAGE ?? `localhost/typst-pdf-service:container-test-${process.pid}`;
const CONTAINER = `typst-pdf-container-test-${process.pid}`;
const KEY = 'container-test-key-0123456789';
/** The whole run, base image and build included, stops here. */
const OVERALL_LIMIT_MS = 40 * 60_000;
/** About 2 s of compile on a quiet machine, then one page (as in test/shutdown.test.ts). */
const SLOW = '#for i in range(4000) { for j in range(4000) { } }\nfinished';

/** This machine's cgroups need runc and the cgroupfs manager; podman's default limits exceed its hard limits. */
const PODMAN_GLOBAL = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function podman(args: string[], timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'podman',
      [...PODMAN_GLOBAL, ...args],
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function podmanOk(args: string[], timeoutMs?: number): Promise<string> {
  const run = await podman(args, timeoutMs);
  assert.equal(run.code, 0, `podman ${args.join(' ')} failed:\n${run.stderr}${run.stdout}`);
  return run.stdout.trim();
}

/** Runs a command with its output passed through, up to `timeoutMs`. */
function passThrough(command: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} ended with ${code ?? signal}`)),
    );
  });
}

async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  console.log(`container: ${name} (${Math.round(performance.now() - started)} ms)`);
  return result;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

let cleaned: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaned ??= (async () => {
    await podman(['rm', '--force', '--time', '0', CONTAINER], 60_000);
    if (!GIVEN_IMAGE) await podman(['rmi', '--force', TAG], 60_000);
  })();
  return cleaned;
}

async function fail(reason: unknown): Promise<never> {
  console.error(`container: FAILED: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
  const logs = await podman(['logs', '--tail', '40', CONTAINER], 20_000);
  if (logs.code === 0) console.error(`container: last log lines of the service:\n${logs.stdout}${logs.stderr}`);
  await cleanUp();
  process.exit(1);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void fail(`stopped by ${signal}`));
setTimeout(() => void fail(`not done within ${OVERALL_LIMIT_MS / 60_000} minutes`), OVERALL_LIMIT_MS).unref();

async function waitReady(base: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if ((await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`the service was not ready within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function render(base: string, body: unknown): Promise<Response> {
  return fetch(`${base}/v1/pdf/generate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
}

interface Example {
  id: string;
  template: string;
  data: string;
  assets?: Record<string, string>;
}

async function main(): Promise<void> {
  const examplesDir = join(ROOT, 'examples');
  const examples = JSON.parse(readFileSync(join(ROOT, 'playground', 'examples.json'), 'utf8')) as Example[];

  if (!GIVEN_IMAGE && (await podman(['image', 'exists', BASE_IMAGE])).code !== 0) {
    await step(`stand-in base image ${BASE_IMAGE} made (scripts/container-base.sh)`, () =>
      passThrough('bash', [join(ROOT, 'scripts', 'container-base.sh'), BASE_IMAGE], 15 * 60_000),
    );
  }

  if (!GIVEN_IMAGE)
    await step(`image built (${TAG})`, async () => {
      // Docker format keeps HEALTHCHECK; chroot isolation and the host network suit a build on a CI machine.
      // No layer cache: nothing of the build stays behind once the image is removed.
      const run = await podman(
        ['build', '--format', 'docker', '--isolation=chroot', '--network=host', '--layers=false', '--force-rm', '--tag', TAG, ROOT],
        20 * 60_000,
      );
      assert.equal(run.code, 0, `the image did not build:\n${run.stdout.slice(-6000)}\n${run.stderr.slice(-6000)}`);
    });

  const size = Number(await podmanOk(['image', 'inspect', '--format', '{{.Size}}', TAG]));
  console.log(`container: image size ${(size / 1e6).toFixed(0)} MB (${size} bytes)`);
  const [inspected] = JSON.parse(await podmanOk(['image', 'inspect', TAG])) as {
    Config?: { User?: string; Healthcheck?: { Test?: string[] } };
    Healthcheck?: { Test?: string[] };
  }[];
  assert.equal(inspected?.Config?.User, 'node', 'the image runs as the node user');
  const healthcheck = inspected?.Healthcheck ?? inspected?.Config?.Healthcheck;
  assert.ok(healthcheck?.Test?.length, 'the image has a HEALTHCHECK');
  console.log(`container: user ${inspected?.Config?.User}, HEALTHCHECK ${JSON.stringify(healthcheck?.Test)}`);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  await step(`container started and ready on ${base}`, async () => {
    await podmanOk(
      [
        'run',
        '--detach',
        '--name',
        CONTAINER,
        '--network=host',
        // Nothing writable but what the service is given: it writes no file (Kubernetes runs it the same way).
        '--read-only',
        '--read-only-tmpfs=false',
        '--ulimit',
        'nofile=10000:10000',
        '--ulimit',
        'nproc=4096:4096',
        '--env',
        'HOST=127.0.0.1',
        '--env',
        `PORT=${port}`,
        '--env',
        `API_KEYS=${KEY}`,
        '--env',
        'WORKERS=2',
        '--env',
        'SPARE_WORKERS=0',
        TAG,
      ],
      120_000,
    );
    await waitReady(base, 60_000);
  });

  for (const id of ['report', 'letter']) {
    const example = examples.find((e) => e.id === id);
    assert.ok(example, `examples.json lists ${id}`);
    const data = JSON.parse(readFileSync(join(examplesDir, example.data), 'utf8')) as Record<string, unknown>;
    const assets = Object.fromEntries(
      Object.entries(example.assets ?? {}).map(([name, file]) => [name, readFileSync(join(examplesDir, file)).toString('base64')]),
    );
    const started = performance.now();
    const res = await render(base, { data, template: readFileSync(join(examplesDir, example.template), 'utf8'), assets });
    const bytes = new Uint8Array(await res.arrayBuffer());
    const ms = Math.round(performance.now() - started);
    assert.equal(res.status, 200, `${id}: ${Buffer.from(bytes).toString()}`);
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    const pdf = await parsePdf(bytes);
    const text = pdf.text.join('\n');
    assert.ok(pdf.pages >= 1, `${id}: pages`);
    if (id === 'report') {
      assert.ok(text.includes(String(data.report_title)), 'the report shows its title');
      assert.equal(pdf.items.at(-1)!.at(-1), `Page ${pdf.pages} of ${pdf.pages}`, "the report's last footer");
    }
    if (id === 'letter') {
      assert.ok(text.includes((data.recipient as { name: string }).name), "the letter shows the recipient's name");
      assert.ok(pdf.forms >= 1, 'the letterhead (an SVG asset) is drawn');
    }
    console.log(`container: ${id} rendered: ${pdf.pages} page(s), ${bytes.byteLength} bytes, fonts ${pdf.fonts.join(', ')} (${ms} ms)`);
  }

  {
    // The e-invoice, finished in the image's workers: its Factur-X XSDs (schemas/) are there.
    const example = examples.find((e) => e.id === 'einvoice');
    assert.ok(example, 'examples.json lists einvoice');
    const data = JSON.parse(readFileSync(join(examplesDir, example.data), 'utf8')) as Record<string, unknown>;
    const template = readFileSync(join(examplesDir, example.template), 'utf8');
    const res = await render(base, { data, template, typst: '0.14', pdf: { einvoice: { profile: 'EN 16931' } } });
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `einvoice: ${bytes.toString()}`);
    assert.ok(bytes.includes('<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>'), 'the e-invoice carries its Factur-X XMP');
    console.log(`container: einvoice rendered as Factur-X EN 16931, ${bytes.byteLength} bytes`);
  }

  const uid = await podmanOk(['exec', CONTAINER, 'id', '-u']);
  assert.equal(uid, '1000', 'exec runs as uid 1000');
  const owners = await podmanOk([
    'exec',
    CONTAINER,
    'sh',
    '-c',
    'for p in /proc/[0-9]*; do [ "$(readlink "$p/exe" 2>/dev/null)" = /usr/local/bin/node ] && echo "$(stat -c %u "$p") $(grep "^Max core file size" "$p/limits" | tr -s " ")"; done; true',
  ]);
  const processes = owners.split('\n').filter((line) => line.includes('Max core'));
  assert.ok(processes.length >= 3, `the server and its two workers: ${owners}`);
  for (const line of processes)
    assert.match(line, /^1000 Max core file size 0 0 bytes\s*$/, `every node process: uid 1000, core dumps 0 0: ${line}`);
  const pid1 = await podmanOk(['exec', CONTAINER, 'sh', '-c', 'grep "^Max core file size" /proc/1/limits']);
  console.log(
    `container: ${processes.length} node processes (server and workers), all uid 1000 with core dumps 0 0; /proc/1/limits: ${pid1.replace(/\s+/g, ' ')}`,
  );

  await step('HEALTHCHECK passed (podman healthcheck run)', async () => {
    const run = await podman(['healthcheck', 'run', CONTAINER], 30_000);
    assert.equal(run.code, 0, `healthcheck: ${run.stdout}${run.stderr}`);
  });

  // Stopping: a slow compile in flight, then SIGTERM to the container.
  const slow = render(base, { data: {}, template: SLOW });
  const inFlight = Date.now() + 10_000;
  for (;;) {
    const ready = (await (await fetch(`${base}/readyz`)).json()) as { busy?: number };
    if ((ready.busy ?? 0) >= 1) break;
    assert.ok(Date.now() < inFlight, 'the slow compile did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const signalled = performance.now();
  await podmanOk(['kill', '--signal', 'TERM', CONTAINER]);
  const answer = await slow;
  const answerBytes = new Uint8Array(await answer.arrayBuffer());
  const answeredMs = Math.round(performance.now() - signalled);
  assert.equal(answer.status, 200, `the compile in flight at SIGTERM: ${Buffer.from(answerBytes).toString()}`);
  const pdf = await parsePdf(answerBytes);
  assert.ok(pdf.text.join(' ').includes('finished'), 'the slow compile finished its page');
  const exit = await podmanOk(['wait', CONTAINER], 60_000);
  const exitedMs = Math.round(performance.now() - signalled);
  assert.equal(exit, '0', 'the container exits 0 after SIGTERM');
  // Promptly: once the compile has answered, not at the end of SHUTDOWN_TIMEOUT_MS (25 s).
  assert.ok(exitedMs - answeredMs < 5000, `the container exits promptly once the compile has answered (${exitedMs} ms after SIGTERM)`);
  console.log(`container: SIGTERM with a compile in flight: answered 200 after ${answeredMs} ms, exited 0 after ${exitedMs} ms`);

  await step(GIVEN_IMAGE ? 'container removed' : 'container and image removed', cleanUp);
  console.log('container: all checks passed');
}

const started = performance.now();
main().then(
  () => {
    console.log(`container: done in ${Math.round((performance.now() - started) / 1000)} s`);
    process.exit(0);
  },
  (error: unknown) => fail(error),
);
