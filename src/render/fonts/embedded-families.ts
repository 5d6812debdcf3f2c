// The fonts every worker has without loading a file: catalog.ts lists them
// in GET /v1/fonts beside the bundled and the operator's fonts.

import type { EngineId } from '../../engines.js';
import type { FontStyle } from './types.js';

const RIBBI = [
  { style: 'normal', weight: 400 },
  { style: 'normal', weight: 700 },
  { style: 'italic', weight: 400 },
  { style: 'italic', weight: 700 },
] as const;

/**
 * Fonts compiled into the typst-ts bindings themselves (typst-assets).
 * Verified by compiling with `fallback: false` while system font
 * directories were hidden: each family/style embedded its own font file.
 * New Computer Modern Math has Regular (400) and Book (450) cuts only.
 * Typst 0.14 replaced Linux Libertine with Libertinus Serif: `typst` names
 * the engines a family is in, when not both.
 */
export const TYPST_EMBEDDED_FAMILIES: { family: string; styles: { style: FontStyle; weight: number }[]; typst?: EngineId[] }[] = [
  { family: 'Linux Libertine', styles: [...RIBBI], typst: ['0.11'] },
  { family: 'Libertinus Serif', styles: [...RIBBI], typst: ['0.14'] },
  { family: 'New Computer Modern', styles: [...RIBBI] },
  {
    family: 'New Computer Modern Math',
    styles: [
      { style: 'normal', weight: 400 },
      { style: 'normal', weight: 450 },
    ],
  },
  {
    family: 'DejaVu Sans Mono',
    styles: RIBBI.map((s) => ({ ...s, style: s.style === 'italic' ? 'oblique' : s.style })),
  },
];
