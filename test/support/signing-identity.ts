/**
 * A throw-away signing identity made with `openssl`, as an operator would
 * make a test one: a root CA, a signing certificate it issued, and a
 * PKCS#12 file of the key, the certificate and the CA (OpenSSL 3's
 * defaults: AES-256, a SHA-256 MAC), with its password in a file.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SIGNER_NAME = 'Test Signer';

export interface TestIdentity {
  dir: string;
  p12: string;
  passwordFile: string;
  /** The CA's certificate (PEM), for a reader that should trust the signer. */
  caCertificate: string;
  /** The service's settings for this identity. */
  env: { SIGNING_P12_FILE: string; SIGNING_PASSWORD_FILE: string };
  /** Another PKCS#12 file of the same identity, written with OpenSSL's `-legacy` encryption (RC2-40). */
  legacyP12(): string;
  dispose(): void;
}

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });

export function makeTestIdentity(keyType: 'rsa' | 'ec' = 'rsa'): TestIdentity {
  const dir = mkdtempSync(join(tmpdir(), 'signing-identity-'));
  const newKey = keyType === 'rsa' ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=Test Root CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  openssl(['req', ...newKey, '-nodes', '-keyout', 'signer.key', '-out', 'signer.csr', '-subj', `/CN=${SIGNER_NAME}/O=Example`], dir);
  writeFileSync(join(dir, 'ext.cnf'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\n');
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'signer.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'signer.crt',
      '-days',
      '2',
      '-extfile',
      'ext.cnf',
    ],
    dir,
  );
  // The password as `echo` would write it: with a line end, which the service ignores.
  writeFileSync(join(dir, 'password'), 'correct horse battery staple\n');
  const p12 = join(dir, 'signer.p12');
  openssl(
    ['pkcs12', '-export', '-inkey', 'signer.key', '-in', 'signer.crt', '-certfile', 'ca.crt', '-out', p12, '-passout', 'file:password'],
    dir,
  );
  return {
    dir,
    p12,
    passwordFile: join(dir, 'password'),
    caCertificate: join(dir, 'ca.crt'),
    env: { SIGNING_P12_FILE: p12, SIGNING_PASSWORD_FILE: join(dir, 'password') },
    legacyP12() {
      const legacy = join(dir, 'legacy.p12');
      openssl(
        ['pkcs12', '-export', '-legacy', '-inkey', 'signer.key', '-in', 'signer.crt', '-out', legacy, '-passout', 'file:password'],
        dir,
      );
      return legacy;
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
