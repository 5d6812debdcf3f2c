/**
 * Versions of the service and of what it runs on, read without starting
 * anything (for `--help`, `--version` and the OpenAPI document).
 */
import { readFileSync } from 'node:fs';
import { TYPST_VERSION } from './render/typst-version.js';

interface Manifest {
  name: string;
  version: string;
  dependencies: Record<string, string>;
}

// dist/src/version.js -> package.json at the project root.
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Manifest;

export const SERVICE_NAME = manifest.name;
export const SERVICE_VERSION = manifest.version;
export const BINDING = '@myriaddreamin/typst-ts-node-compiler';
export const BINDING_VERSION = manifest.dependencies[BINDING] ?? 'unknown';
export { TYPST_VERSION };
