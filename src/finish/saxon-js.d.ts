/** SaxonJS ships no types; business-rules.ts types the few calls it makes. */
declare module 'saxon-js' {
  const SaxonJS: unknown;
  export default SaxonJS;
}
