/**
 * Versions of the service and of what it runs on, read without starting
 * anything (for `--help`, `--version` and the OpenAPI document).
 */
import { readFileSync } from 'node:fs';
import { ENGINE_IDS, ENGINE_PACKAGES, ENGINE_VERSIONS } from './engines.js';

interface Manifest {
  name: string;
  version: string;
  dependencies: Record<string, string>;
}

// dist/src/version.js -> package.json at the project root.
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Manifest;

export const SERVICE_NAME = manifest.name;
export const SERVICE_VERSION = manifest.version;

/** Each engine's Typst version and the binding version it comes from (an alias names it as `npm:<name>@<version>`). */
export const ENGINES = ENGINE_IDS.map((id) => {
  const { module, binding } = ENGINE_PACKAGES[id];
  const spec = manifest.dependencies[module] ?? 'unknown';
  return { id, typst: ENGINE_VERSIONS[id], binding, bindingVersion: spec.replace(/^npm:.*@/, '') };
});
