/** SaxonJS ships no types; rules-thread.ts types the few calls it makes. */
declare module 'saxon-js' {
  const SaxonJS: unknown;
  export default SaxonJS;
}
