/**
 * The API key: typed once, kept for this browser tab only (sessionStorage),
 * never written to a URL, localStorage or a cookie.
 */
const STORAGE_NAME = 'typst-pdf-playground.api-key';

export function loadKey(): string {
  try {
    return sessionStorage.getItem(STORAGE_NAME) ?? '';
  } catch {
    return ''; // storage disabled: the key lives in the field only
  }
}

export function saveKey(key: string): void {
  try {
    if (key === '') sessionStorage.removeItem(STORAGE_NAME);
    else sessionStorage.setItem(STORAGE_NAME, key);
  } catch {
    // storage disabled or full: nothing to do
  }
}
