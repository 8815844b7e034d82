import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { EnvSchema, loadConfig } from '../../src/config.js';
import { SHUTDOWN_DEADLINE_MS } from '../../src/lifecycle/shutdown.js';
import { isSecretVariable } from './secretVariables.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const DIR = `${REPO}deploy/kubernetes/`;

interface Probe {
  httpGet: { path: string; port: string };
  periodSeconds: number;
  failureThreshold: number;
}
interface Container {
  image: string;
  ports: Array<{ name: string; containerPort: number }>;
  envFrom: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  env?: unknown;
  readinessProbe: Probe;
  livenessProbe: Probe;
  resources: { requests: { memory: string; cpu?: string }; limits: { memory: string } };
  securityContext: { readOnlyRootFilesystem: boolean };
  volumeMounts: Array<{ name: string; mountPath: string }>;
}
interface Manifest {
  kind: string;
  metadata: { name: string };
  // biome-ignore lint/suspicious/noExplicitAny: each kind's spec is read through the interfaces above
  spec: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

const manifests: Manifest[] = readdirSync(DIR)
  .filter((name) => name.endsWith('.yaml'))
  .flatMap((name) => parseAllDocuments(readFileSync(`${DIR}${name}`, 'utf8')).map((doc) => doc.toJS() as Manifest));

function one(kind: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as Manifest;
}

/** Kubernetes memory quantities (Mi, Gi, M, G) in bytes. */
function bytes(quantity: string): number {
  const match = /^(\d+)(Ki|Mi|Gi|k|M|G)?$/.exec(quantity);
  assert.ok(match, quantity);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, k: 1e3, M: 1e6, G: 1e9 }[match[2] ?? ''] ?? 1;
  return Number(match[1]) * unit;
}

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  const deployment = one('Deployment');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0] as Container;
  const configMap = one('ConfigMap');
  const secret = one('Secret');
  const defaults = loadConfig({});
  const port = (name: string) => container.ports.find((p) => p.name === name)?.containerPort;

  it('a Deployment, a Service, a PodDisruptionBudget, a ConfigMap and a Secret', () => {
    assert.deepEqual(manifests.map((m) => m.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Secret',
      'Service',
    ]);
  });

  it('probes readiness on the admin port /readyz and liveness on /healthz', () => {
    assert.equal(Number(configMap.data?.ADMIN_PORT), port('admin'));
    assert.deepEqual(container.readinessProbe.httpGet, { path: '/readyz', port: 'admin' });
    assert.deepEqual(container.livenessProbe.httpGet, { path: '/healthz', port: 'admin' });
    assert.equal(Number(configMap.data?.PORT), port('http'));
    assert.equal(configMap.data?.HOST, '0.0.0.0');
  });

  it('gives a shutdown its whole time: grace period > drain delay + shutdown deadline; the pod leaves the endpoints within the drain delay', () => {
    // The drain delay (SHUTDOWN_DELAY_SECONDS) as configured, or its default.
    const configured = configMap.data?.SHUTDOWN_DELAY_SECONDS;
    const drainMs = configured === undefined ? defaults.shutdownDelayMs : Number(configured) * 1000;
    assert.ok(pod.terminationGracePeriodSeconds * 1000 > drainMs + SHUTDOWN_DEADLINE_MS);
    const { periodSeconds, failureThreshold } = container.readinessProbe;
    assert.ok(periodSeconds * failureThreshold * 1000 <= drainMs);
  });

  it('requests and limits memory above the README figure for the default cache budget', () => {
    const readme = readFileSync(`${REPO}README.md`, 'utf8');
    const figure = new RegExp(`\\b${defaults.cacheMaxMb} keeps RSS under (\\d+) MB`).exec(readme);
    assert.ok(figure, 'the README gives the RSS of the default CACHE_MAX_MB');
    const rss = Number(figure[1]) * 1e6;
    assert.equal(configMap.data?.CACHE_MAX_MB, undefined, 'the figure holds for the default budget');
    assert.ok(bytes(container.resources.requests.memory) >= rss);
    assert.ok(bytes(container.resources.limits.memory) >= bytes(container.resources.requests.memory));
  });

  it('takes settings from the ConfigMap and tokens from the Secret, each a variable the gateway reads', () => {
    assert.deepEqual(container.envFrom, [
      { configMapRef: { name: configMap.metadata.name } },
      { secretRef: { name: secret.metadata.name } },
    ]);
    assert.equal(container.env, undefined);
    const variables = Object.keys(EnvSchema.shape);
    for (const name of Object.keys(configMap.data ?? {})) {
      assert.ok(variables.includes(name), `${name} is not a gateway variable`);
      assert.ok(!isSecretVariable(name), `${name} belongs in the Secret`);
    }
    const secrets = Object.keys(secret.stringData ?? {});
    assert.ok(secrets.length > 0);
    for (const name of secrets) assert.ok(variables.includes(name) && isSecretVariable(name), name);
    for (const name of ['PLATFORM_GRAPHQL_URL', 'KEY_SERVICE_URL']) assert.ok(configMap.data?.[name], name);
  });

  it('writes only to the data volume, as an unprivileged user', () => {
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.deepEqual(container.volumeMounts, [{ name: 'data', mountPath: '/app/data' }]);
    assert.ok(defaults.usageSpoolDir.endsWith('/data/usage-spool'));
  });

  it('the Service and the PodDisruptionBudget select the pods; the Service leaves the admin port out', () => {
    const labels = deployment.spec.template.metadata.labels;
    assert.deepEqual(deployment.spec.selector.matchLabels, labels);
    const service = one('Service');
    assert.deepEqual(service.spec.selector, labels);
    assert.deepEqual(
      service.spec.ports.map((p: { targetPort: string }) => p.targetPort),
      ['http'],
    );
    const budget = one('PodDisruptionBudget');
    assert.deepEqual(budget.spec.selector.matchLabels, labels);
    assert.ok(budget.spec.maxUnavailable < deployment.spec.replicas);
  });

  it('runs the image the documented build makes: name and tag', () => {
    const guide = readFileSync(`${REPO}deploy/README.md`, 'utf8');
    const built = /`docker build -t (\S+) \.`/.exec(guide)?.[1];
    const { name, version } = JSON.parse(readFileSync(`${REPO}package.json`, 'utf8')) as {
      name: string;
      version: string;
    };
    assert.equal(built, `${name}:${version}`, 'the build tags the package version, never an implicit :latest');
    assert.equal(container.image, built);
  });

  it('requires Redis, where the usage of a stopping pod survives it (its spool is an emptyDir), and says so', () => {
    const tokens = Object.fromEntries(Object.keys(secret.stringData ?? {}).map((name) => [name, 'token']));
    const config = loadConfig({ ...configMap.data, ...tokens });
    assert.notEqual(config.redis, null, 'the ConfigMap names a Redis');
    assert.notEqual(config.upstreams, null, 'and the real upstreams');
    const volume = pod.volumes.find((v: { name: string }) => v.name === 'data');
    assert.ok(volume?.emptyDir, 'the spool lives and dies with the pod');
    const guide = readFileSync(`${REPO}deploy/README.md`, 'utf8').replace(/\s+/g, ' ');
    assert.match(guide, /The manifests require Redis/);
  });

  it('lets Prometheus scrape /metrics on the admin port (pod annotations)', () => {
    const annotations = deployment.spec.template.metadata.annotations ?? {};
    assert.equal(annotations['prometheus.io/scrape'], 'true');
    assert.equal(Number(annotations['prometheus.io/port']), port('admin'));
    assert.equal(annotations['prometheus.io/path'], '/metrics');
  });

  it('mounts no service account token and spreads the replicas over nodes and zones', () => {
    assert.equal(pod.automountServiceAccountToken, false);
    const labels = deployment.spec.template.metadata.labels;
    const spread = pod.topologySpreadConstraints as Array<{
      topologyKey: string;
      maxSkew: number;
      labelSelector: { matchLabels: Record<string, string> };
    }>;
    assert.deepEqual(
      spread.map((constraint) => constraint.topologyKey),
      ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'],
    );
    for (const constraint of spread) {
      assert.equal(constraint.maxSkew, 1);
      assert.deepEqual(constraint.labelSelector.matchLabels, labels);
    }
  });

  it('the image exposes both ports the pod declares, with the admin port set as the ConfigMap sets it', () => {
    const dockerfile = readFileSync(`${REPO}Dockerfile`, 'utf8');
    const exposed = (/^EXPOSE (.+)$/m.exec(dockerfile)?.[1] ?? '').split(/\s+/).map(Number);
    assert.deepEqual(
      exposed,
      container.ports.map((p) => p.containerPort),
    );
    assert.match(dockerfile, new RegExp(`^ENV .*\\bADMIN_PORT=${configMap.data?.ADMIN_PORT}\\b`, 'm'));
    assert.match(dockerfile, new RegExp(`^ENV .*\\bPORT=${configMap.data?.PORT}\\b`, 'm'));
  });
});
