/**
 * The compiler's project root: a path that must not exist on the host, so
 * every file path a template names resolves to nothing. In its own module
 * so that the server can name it without loading the compiler's native code.
 */
export const VIRTUAL_ROOT = '/typst-pdf-service-virtual-root';
