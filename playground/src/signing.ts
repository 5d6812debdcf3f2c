/**
 * The "Signed" switch: asks for the PDF signed by the service's identity
 * (`pdf.signature`). `GET /readyz` says whether the service has one
 * (`signing`); without one the switch is greyed out, with the reason beside it.
 */

/** Beside the switch: short, so the toolbar keeps its height. */
const NO_IDENTITY = 'no signing identity on this service';
/** On the switch itself: what the operator would set. */
const NO_IDENTITY_TITLE = 'This service has no signing identity: its operator sets SIGNING_P12_FILE and SIGNING_PASSWORD_FILE.';

export class SignedSwitch {
  constructor(
    private readonly input: HTMLInputElement,
    private readonly note: HTMLElement,
    onChange: () => void,
  ) {
    input.disabled = true;
    input.addEventListener('change', onChange);
    void this.load();
  }

  private async load(): Promise<void> {
    let signing = false;
    try {
      const response = await fetch('/readyz', { cache: 'no-store', credentials: 'omit' });
      signing = ((await response.json()) as { signing?: unknown }).signing === true;
    } catch {
      // No answer: left greyed out, with the reason.
    }
    this.input.disabled = !signing;
    if (!signing) this.input.checked = false;
    this.note.textContent = signing ? '' : NO_IDENTITY;
    this.input.title = signing ? 'Sign the PDF with the service’s identity' : NO_IDENTITY_TITLE;
  }

  /** The request's `pdf.signature`, when asked for. */
  signature(): { signature: Record<string, never> } | undefined {
    return this.input.checked && !this.input.disabled ? { signature: {} } : undefined;
  }
}
