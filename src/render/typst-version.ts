/** Typst version of the pinned binding (its PDFs say "Typst 0.11.1"). */
export const TYPST_VERSION = '0.11.1';
