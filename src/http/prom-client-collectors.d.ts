/** prom-client's collectors of process metrics, one file each (process-metrics.ts); the package types only its index. */
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry } from 'prom-client';
  const collect: (registry: Registry, config: { prefix?: string }) => void;
  export default collect;
}
