// Browser tests: Debian's headless Chromium driven by playwright-core (no downloaded browsers),
// a CDP virtual authenticator for WebAuthn, and a node:http server that serves one test page and
// hands every other request to the application, so the page and the API share one origin.
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type CDPSession, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Headless Chromium with a fresh profile. The background-networking flags matter here: without
 * them Chromium's own connections (updates, sync, QUIC probes) are refused by the closed network.
 * Throws, never skips, when the browser is missing.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install Debian's chromium: apt-get install -y chromium (playwright's own browsers cannot be downloaded here)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A credential as `WebAuthn.getCredentials` lists it (binary fields in base64, not base64url). */
export interface VirtualCredential {
  credentialId: string;
  isResidentCredential: boolean;
  rpId?: string;
  userHandle?: string;
  signCount: number;
  backupEligibility?: boolean;
  backupState?: boolean;
  privateKey: string;
}

/** Options of `WebAuthn.addVirtualAuthenticator` a test may change (CDP's VirtualAuthenticatorOptions). */
export interface VirtualAuthenticatorOptions {
  protocol: 'ctap2' | 'u2f';
  transport: 'usb' | 'nfc' | 'ble' | 'cable' | 'internal';
  hasResidentKey: boolean;
  hasUserVerification: boolean;
  isUserVerified: boolean;
  automaticPresenceSimulation: boolean;
  defaultBackupEligibility: boolean;
  defaultBackupState: boolean;
}

export interface VirtualAuthenticator {
  cdp: CDPSession;
  authenticatorId: string;
  /** The credentials the authenticator holds now (ids and user handles base64, not base64url). */
  credentials(): Promise<VirtualCredential[]>;
}

/**
 * A CTAP2 platform authenticator on `page` (resident keys, user verification that always
 * succeeds, presence simulated: no prompt). It stays with the page across navigations.
 */
export async function addVirtualAuthenticator(
  page: Page,
  options: Partial<VirtualAuthenticatorOptions> = {},
): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
      ...options,
    },
  });
  return {
    cdp,
    authenticatorId,
    credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials,
  };
}

export interface PageServer {
  /** The test page, e.g. `http://localhost:41234/passkey-test`. */
  url: string;
  /** `http://localhost:<port>`, the origin the application must allow. */
  origin: string;
  port: number;
  close(): Promise<void>;
}

export const PAGE_PATH = '/passkey-test';

/**
 * Listens on 127.0.0.1 (`port`, else any free one): `GET /passkey-test` answers `html`, every
 * other request goes to `appHandler` (an Express app is one). The URL names `localhost`, which
 * Chromium resolves to the loopback itself; WebAuthn needs a domain as RP id, not an address.
 */
export async function serveWithPage(appHandler: http.RequestListener, html: string, options: { port?: number } = {}): Promise<PageServer> {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && new URL(req.url ?? '/', 'http://x').pathname === PAGE_PATH) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(html);
      return;
    }
    appHandler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://localhost:${port}`;
  return {
    url: `${origin}${PAGE_PATH}`,
    origin,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
