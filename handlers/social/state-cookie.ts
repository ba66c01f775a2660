// The cookie that binds a browser sign-in's state to the browser that started it. On https it is
// `__Host-social-state`, Secure and SameSite=None, so provider_b's cross-site form post carries
// it; plain-http development cannot have SameSite=None (browsers require Secure), so it is Lax
// there and only provider_a's GET callback works in a real browser.
import type { Request } from 'express';
import type { Config } from '../../src/config';
import { STATE_TTL_MS } from '../../src/social/service';
import { hostCookieName, readCookie } from '../../src/http/authenticate';

const NAME = 'social-state';

function cookie(config: Config, value: string, maxAgeSeconds: number): string {
  const secure = config.publicBaseUrl.startsWith('https:');
  return `${hostCookieName(config, NAME)}=${value}; Path=/; HttpOnly; ${secure ? 'Secure; SameSite=None' : 'SameSite=Lax'}; Max-Age=${maxAgeSeconds}`;
}

export const setStateCookie = (config: Config, binding: string) => cookie(config, binding, STATE_TTL_MS / 1000);
export const clearStateCookie = (config: Config) => cookie(config, '', 0);
export const readStateCookie = (config: Config, req: Request) => readCookie(req, hostCookieName(config, NAME));
