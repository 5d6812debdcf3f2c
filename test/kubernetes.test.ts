/**
 * The Kubernetes manifests in deploy/kubernetes/: every object is valid
 * against the Kubernetes schemas (kubernetes-models), and they agree with the
 * service: every variable they set is a setting (src/config.ts) with a value
 * it accepts, the ports and probe paths are the ones the running service
 * answers on, the keys file is a mounted Secret, Redis is the manifests' own
 * Service, the grace period outlasts the shutdown timeout, WORKERS matches
 * the CPU limit, and the pod runs as the image's user on a read-only root.
 * compose.yaml's stop grace period is checked against the shutdown timeout too.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as models from 'kubernetes-models';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig, SETTINGS } from '../src/config.js';
import { startService, type Service } from './support/service.js';

const DIR = new URL('../../deploy/kubernetes/', import.meta.url);
const SERVICE_IMAGE = /^typst-pdf-service(:|$)/;

interface Manifest {
  file: string;
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: any;
}

const manifests: Manifest[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) =>
    parseAllDocuments(readFileSync(new URL(file, DIR), 'utf8')).map((doc) => {
      assert.deepEqual(doc.errors, [], `${file}: YAML errors`);
      return { file, ...(doc.toJS() as Omit<Manifest, 'file'>) };
    }),
  );

/** Every model class of kubernetes-models, by "apiVersion kind". */
function modelClasses(): Map<string, new (data: unknown) => { validate(): void }> {
  const found = new Map<string, new (data: unknown) => { validate(): void }>();
  const visit = (namespace: Record<string, unknown>, depth: number) => {
    for (const value of Object.values(namespace)) {
      if (typeof value === 'function') {
        const { apiVersion, kind } = value as unknown as { apiVersion?: string; kind?: string };
        if (apiVersion && kind) found.set(`${apiVersion} ${kind}`, value as new (data: unknown) => { validate(): void });
      } else if (value && typeof value === 'object' && depth < 3) visit(value as Record<string, unknown>, depth + 1);
    }
  };
  visit(models as unknown as Record<string, unknown>, 0);
  return found;
}

function find(kind: string, name: string): Manifest {
  const manifest = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  assert.ok(manifest, `a ${kind} named ${name}`);
  return manifest;
}

const deployment = find('Deployment', 'typst-pdf');
const pod = deployment.spec.template.spec;
const container = pod.containers.find((c: { image: string }) => SERVICE_IMAGE.test(c.image));
const env: Record<string, string> = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
const config = loadConfig(env);
const httpPort = container.ports.find((p: { name: string }) => p.name === 'http');

/** A probe's or Service's port (a name or a number) as a number on the service's container. */
function portNumber(port: string | number): number {
  return typeof port === 'number' ? port : container.ports.find((p: { name: string }) => p.name === port)?.containerPort;
}

describe('Kubernetes manifests', () => {
  it('are every one valid against the Kubernetes schemas', () => {
    const classes = modelClasses();
    assert.ok(manifests.length >= 6, 'Deployment, Service, PodDisruptionBudget, HorizontalPodAutoscaler and Redis');
    for (const manifest of manifests) {
      const { file, ...object } = manifest;
      const Model = classes.get(`${object.apiVersion} ${object.kind}`);
      assert.ok(Model, `${file}: ${object.apiVersion} ${object.kind} is a Kubernetes kind`);
      assert.doesNotThrow(() => new Model(object).validate(), `${file}: ${object.kind} ${object.metadata.name}`);
    }
  });

  it('the schemas catch a mistake (a string for replicas, a container without a name)', () => {
    const Model = modelClasses().get('apps/v1 Deployment')!;
    const { file: _, ...object } = deployment;
    assert.doesNotThrow(() => new Model(structuredClone(object)).validate());
    const replicas = structuredClone(object);
    replicas.spec.replicas = 'two';
    assert.throws(() => new Model(replicas).validate());
    const unnamed = structuredClone(object);
    delete unnamed.spec.template.spec.containers[0].name;
    assert.throws(() => new Model(unnamed).validate());
  });

  it('set only variables of the settings table, with values the service accepts', () => {
    const names = new Set(SETTINGS.map((s) => s.name));
    for (const manifest of manifests.filter((m) => m.kind === 'Deployment')) {
      for (const c of manifest.spec.template.spec.containers.filter((c: { image: string }) => SERVICE_IMAGE.test(c.image))) {
        for (const e of c.env ?? []) assert.ok(names.has(e.name), `${manifest.file}: ${e.name} is not a setting in src/config.ts`);
      }
    }
    assert.equal(config.port, httpPort.containerPort, 'PORT is the container port named http');
  });

  it('read the keys from a mounted Secret (API_KEYS_FILE), never from a plain variable', () => {
    assert.equal(env.API_KEYS, undefined);
    const mount = container.volumeMounts.find((m: { mountPath: string }) => config.apiKeysFile!.startsWith(`${m.mountPath}/`));
    assert.ok(mount, 'API_KEYS_FILE lies in a mounted volume');
    const volume = pod.volumes.find((v: { name: string }) => v.name === mount.name);
    assert.ok(volume.secret?.secretName, 'that volume is a Secret');
    assert.equal(mount.readOnly, true);
  });

  it("use Redis through the manifests' own Service, on its port", () => {
    const url = new URL(config.redisUrl!);
    const service = find('Service', url.hostname);
    assert.ok(service.spec.ports.some((p: { port: number }) => p.port === Number(url.port)));
    const redis = find('Deployment', url.hostname);
    assert.deepEqual(service.spec.selector, redis.spec.selector.matchLabels);
  });

  it('stop later than the service: the grace period covers the preStop pause and SHUTDOWN_TIMEOUT_MS', () => {
    const pause = Number(container.lifecycle?.preStop?.exec?.command?.at(-1) ?? 0);
    assert.ok(pod.terminationGracePeriodSeconds * 1000 > pause * 1000 + config.shutdownTimeoutMs + 5000);
  });

  it('run as many workers as the CPU limit, as the non-root user of the image, on a read-only root', () => {
    assert.equal(config.workers, Number(container.resources.limits.cpu));
    assert.ok(container.resources.requests.memory && container.resources.limits.memory);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.runAsUser, 1000, 'the uid of the `node` user of the image');
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.match(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8'), /^USER node$/m);
  });

  it('select the pods of the Deployment (Service, PodDisruptionBudget) and scale it (HorizontalPodAutoscaler)', () => {
    const labels = deployment.spec.template.metadata.labels;
    const service = find('Service', 'typst-pdf');
    assert.deepEqual(service.spec.selector, labels);
    assert.equal(portNumber(service.spec.ports[0].targetPort), config.port);
    assert.deepEqual(find('PodDisruptionBudget', 'typst-pdf').spec.selector.matchLabels, labels);
    const hpa = find('HorizontalPodAutoscaler', 'typst-pdf').spec;
    assert.deepEqual([hpa.scaleTargetRef.kind, hpa.scaleTargetRef.name], ['Deployment', 'typst-pdf']);
    assert.ok(hpa.minReplicas >= 2, 'the PodDisruptionBudget leaves a replica serving');
  });

  describe('probes against the running service', () => {
    let service: Service;
    before(async () => {
      service = await startService({ WORKERS: '1' });
    });
    after(async () => {
      await service?.stop();
    });

    it('liveness is /healthz and readiness /readyz, on the http port, and both answer 200', async () => {
      assert.equal(container.livenessProbe.httpGet.path, '/healthz');
      assert.equal(container.readinessProbe.httpGet.path, '/readyz');
      for (const probe of [container.livenessProbe, container.readinessProbe]) {
        assert.equal(portNumber(probe.httpGet.port), config.port);
        const res = await fetch(`${service.url}${probe.httpGet.path}`);
        assert.equal(res.status, 200, probe.httpGet.path);
      }
    });
  });
});

describe('compose.yaml', () => {
  it("gives the api replicas a stop grace period longer than the service's shutdown timeout", () => {
    const compose = parse(readFileSync(new URL('../../compose.yaml', import.meta.url), 'utf8')) as {
      services: { api: { stop_grace_period: string; environment: Record<string, string> } };
    };
    const grace = /^(\d+)s$/.exec(compose.services.api.stop_grace_period);
    assert.ok(grace, 'stop_grace_period in seconds');
    const shutdown = loadConfig({ SHUTDOWN_TIMEOUT_MS: compose.services.api.environment.SHUTDOWN_TIMEOUT_MS }).shutdownTimeoutMs;
    assert.ok(Number(grace[1]) * 1000 > shutdown + 5000, `${grace[1]} s against ${shutdown} ms`);
  });
});
