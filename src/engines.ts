/**
 * The Typst engines the service runs: their names, versions and packages.
 * Pure data: the server checks a request's `typst` field against it without
 * loading a native binding (only workers do that, see render/bindings.ts).
 */

/** The engines, as a request's `typst` field names them. */
export const ENGINE_IDS = ['0.11', '0.14'] as const;
export type EngineId = (typeof ENGINE_IDS)[number];

/** The exact Typst version each engine embeds (its PDFs say "Typst <version>"; answered as `X-Typst-Version`). */
export const ENGINE_VERSIONS: Record<EngineId, string> = { '0.11': '0.11.1', '0.14': '0.14.2' };

/** The npm package each engine is loaded from, and the package it is published as. */
export const ENGINE_PACKAGES: Record<EngineId, { module: string; binding: string }> = {
  '0.11': { module: '@myriaddreamin/typst-ts-node-compiler', binding: '@myriaddreamin/typst-ts-node-compiler' },
  '0.14': { module: 'typst-ts-node-compiler-0.14', binding: '@myriaddreamin/typst-ts-node-compiler' },
};

/** The engine a request gets without a `typst` field, unless the operator names another (TYPST_VERSION). */
export const DEFAULT_ENGINE: EngineId = '0.11';

/** The engine a name stands for: the short form ("0.14") or the exact version ("0.14.2"). */
export function engineOf(name: string): EngineId | undefined {
  return ENGINE_IDS.find((id) => id === name || ENGINE_VERSIONS[id] === name);
}
