/**
 * Start: read the settings, load the keys, start the worker pool, listen,
 * and stop cleanly on SIGTERM or SIGINT.
 */
import type { Server } from 'node:http';
import { ensureStartSettings, StartSettingsError } from './retention/start-settings.js';
import { freedMemoryFill } from './retention/freed-memory-fill.js';
import { createLogger } from './logger.js';
import { buildApp } from './app.js';
import { answerServerArgs, ServerArgsError } from './server-args.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { ProcessLimitError, setProcessLimits } from './process-limits.js';
import { AnswerLimits } from './http/answer-limits.js';
import { PendingBodies } from './request/pending-bodies.js';
import { UnavailableError } from './render/errors.js';
import { KeyStore } from './http/keys.js';
import { listenMetrics, ServiceMetrics } from './http/metrics.js';
import { handleShutdownSignals, holdStopSignals } from './shutdown.js';
import { RenderPool } from './render/pool.js';
import { loadFontCatalog } from './render/fonts/catalog.js';
import { workerLaunch } from './render/parent-death.js';
import type { FontCatalog } from './render/fonts/types.js';
import { MAX_COPIED_MIB } from './render/package-scan.js';
import { createSandbox } from './render/sandbox.js';
import { startReadBufferScrub } from './retention/read-buffer-scrub.js';
import { stopParserReuse } from './retention/http-parsers.js';
import { READS_FOLLOWED } from './retention/kept-alive-heads.js';
import { SERVICE_NAME } from './version.js';
import type { PdfSigner } from './finish/signature-signer.js';

function fail(message: string): never {
  process.stderr.write(`${SERVICE_NAME}: ${message}\n`);
  process.exit(1);
}

/** Never run open: with no key configured, a key is made for this run and shown once. */
function loadKeys(config: Config): { keys: KeyStore; generated?: string } {
  const keys = KeyStore.load(config.apiKeys, config.apiKeysFile);
  if (keys.size > 0) return { keys };
  const { store, key } = KeyStore.generate();
  return { keys: store, generated: key };
}

function printGeneratedKey(key: string, baseUrl: string): void {
  process.stdout.write(
    [
      '',
      'No API_KEYS or API_KEYS_FILE set; generated an API key for this run:',
      '',
      `  ${key}`,
      '',
      'Try it:',
      `  curl -X POST ${baseUrl}/v1/pdf/generate \\`,
      `    -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\`,
      `    -d '{"data":{"name":"World"},"template":"= Hello #data.name"}' -o hello.pdf`,
      '',
      '',
    ].join('\n'),
  );
}

async function main(): Promise<void> {
  let config: Config;
  let keys: ReturnType<typeof loadKeys>;
  try {
    ensureStartSettings();
    // The banner's writes must not end the service when whoever read stdout has gone (EPIPE): the log drops its lines then.
    process.stdout.on('error', () => undefined);
    setProcessLimits();
    config = loadConfig();
    keys = loadKeys(config);
  } catch (error) {
    if (error instanceof StartSettingsError || error instanceof ConfigError || error instanceof ProcessLimitError) fail(error.message);
    throw error;
  }

  // Read before any worker starts; workers are never given the key (nor the settings naming its files). The signing
  // code (pkijs and asn1js: 2.4 MB of the heap, a fifth of the time of each collection of the whole heap) is loaded
  // only for an identity.
  let signer: PdfSigner | undefined;
  if (config.signingP12File && config.signingPasswordFile) {
    const { loadSigningIdentity, SigningIdentityError } = await import('./finish/signature-identity.js');
    const { PdfSigner } = await import('./finish/signature-signer.js');
    try {
      signer = new PdfSigner(await loadSigningIdentity(config.signingP12File, config.signingPasswordFile));
    } catch (error) {
      if (error instanceof SigningIdentityError) fail(error.message);
      throw error;
    }
  }

  const logger = createLogger(config.logLevel);
  const fill = freedMemoryFill();
  // Said once: the fallback is safe but slow, and an operator should know why.
  if (fill.method === 'perturb') logger.warn(fill.description);
  else logger.info(fill.description);
  let fonts: FontCatalog;
  try {
    fonts = loadFontCatalog(config.fontPath);
  } catch (error) {
    fail((error as Error).message);
  }
  // From the first thing a start leaves behind on: a signal is acted on once the service has started.
  const startSignals = holdStopSignals();
  const sandbox = createSandbox(config.packagePath);
  // However the process ends (a failed start, a stop, a second signal during the start), the copy of PACKAGE_PATH
  // goes here, and only here.
  process.once('exit', () => sandbox.dispose());
  if (config.packagePath) {
    logger.info(
      sandbox.packagesMayHandOutEval
        ? `PACKAGE_PATH is used in place (a file in it names eval or std, is a link or cannot be read, or it holds over ${MAX_COPIED_MIB} MiB): on Typst 0.14 a template that imports a package is compiled as a file, and its worker makes a new compiler after the job`
        : 'PACKAGE_PATH was copied at start: packages added or changed later take effect after a restart',
    );
  }
  const pool = new RenderPool({
    ...config,
    engine: {
      packageDirectory: sandbox.packageDirectory,
      fonts,
      maxPdfBytes: config.maxPdfBytes,
      workerWritesPdfBytes: config.workerWritesPdfBytes,
      defaultEngine: config.defaultEngine,
      maxImagePixels: config.maxImagePixels,
      einvoiceRules: config.einvoiceRules,
      packagesMayHandOutEval: sandbox.packagesMayHandOutEval,
    },
    env: sandbox.env,
  });
  const launch = workerLaunch();
  if (launch.byKernel) logger.info(launch.description);
  else logger.warn(launch.description);
  pool.on('restart', ({ reason }) => logger.warn({ reason }, 'worker replaced'));
  pool.on('started', ({ seconds }) => logger.info({ ms: Math.round(seconds * 1000) }, 'worker started'));
  const answers = new AnswerLimits({
    maxPendingBytes: config.maxPendingAnswersMb * 1024 * 1024,
    readerStallMs: config.readerStallTimeoutMs,
  });
  const bodies = new PendingBodies(config.maxPendingBodiesMb * 1024 * 1024);
  const metrics = new ServiceMetrics(pool, answers);
  answers.on('stalled', (requestId) => logger.info({ reqId: requestId }, 'reader stalled: answer cut off'));

  let closing = false;
  if (!stopParserReuse())
    logger.warn("this Node.js's HTTP parsers could not be kept from reuse: a head cut across reads may stay in the server");
  if (!READS_FOLLOWED) logger.warn("this Node.js's HTTP parsers' reads cannot be followed: every answer closes its connection");
  try {
    await startReadBufferScrub();
    await pool.start();
  } catch (error) {
    await pool.close();
    fail((error as Error).message);
  }

  const app = await buildApp({
    keys: keys.keys,
    renderer: pool,
    fonts: pool,
    health: { stats: () => pool.stats(), closing: () => closing, signing: signer !== undefined },
    signer,
    logger,
    compileTimeoutMs: config.compileTimeoutMs,
    crashesPerMinute: config.crashesPerMinute,
    answers,
    rateLimit: {
      limit: config.rateLimitPerMinute,
      windowMs: config.rateLimitWindowMs,
      maxAddresses: config.rateLimitAddresses,
      redisUrl: config.redisUrl,
      redisTimeoutMs: config.redisTimeoutMs,
    },
    trustProxy: config.trustProxy,
    metrics,
    metricsOnOwnPort: config.metricsPort !== undefined,
    playground: config.playground,
    maxImagePixels: config.maxImagePixels,
    bodies,
    bodyTimeoutMs: config.bodyTimeoutMs,
    defaultEngine: config.defaultEngine,
  });

  let metricsServer: Server | undefined;
  handleShutdownSignals({
    app,
    pool,
    logger,
    timeoutMs: config.shutdownTimeoutMs,
    beginClosing: () => {
      closing = true;
      // Shutdown waits only for requests whose body is whole: the others are answered 503 now.
      bodies.stopAll(new UnavailableError('shutting_down'));
    },
    get metricsServer() {
      return metricsServer;
    },
  });
  const signalledDuringStart = startSignals.release();

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await pool.close();
    fail(`cannot listen on ${config.host}:${config.port} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (config.metricsPort !== undefined) {
    try {
      metricsServer = await listenMetrics(metrics, config.metricsPort, config.host);
    } catch (error) {
      await app.close();
      await pool.close();
      fail(`cannot listen for metrics on ${config.host}:${config.metricsPort} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const metricsAddress = metricsServer.address();
    const metricsPort = typeof metricsAddress === 'object' && metricsAddress ? metricsAddress.port : config.metricsPort;
    process.stdout.write(
      `${SERVICE_NAME} metrics on http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${metricsPort}/metrics\n`,
    );
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  // Bound to every interface: the banner names an address a browser on this machine reaches.
  const everywhere = typeof address === 'object' && address !== null && (address.address === '0.0.0.0' || address.address === '::');
  const where =
    typeof address === 'object' && address
      ? `http://${everywhere ? 'localhost' : address.family === 'IPv6' ? `[${address.address}]` : address.address}:${port}`
      : String(address);
  if (keys.generated) printGeneratedKey(keys.generated, where);
  process.stdout.write(
    `${SERVICE_NAME} listening on ${where} with ${config.workers} workers${everywhere ? ' (on every interface)' : ''}\n`,
  );
  if (config.playground) process.stdout.write(`${SERVICE_NAME} playground at ${where}/playground\n`);
  logger.info({ address: where, workers: config.workers }, 'listening');
  if (signalledDuringStart) process.emit(signalledDuringStart, signalledDuringStart);
}

/** Whether the arguments were answered (`--help`, `--version`), so that the server does not start. */
function answeredArgs(): boolean {
  try {
    return answerServerArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof ServerArgsError)) throw error;
    return fail(error.message);
  }
}

if (!answeredArgs()) void main();
