import { z } from 'zod';

/**
 * Whether a URL carries `user[:password]@`. Endpoint URLs are refused with credentials in them:
 * a spec is stored in Temporal's history as written, and URLs reach logs and error messages.
 * Pure (workflow code validates specs with it).
 */
export function hasUserInfo(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false; // not a URL: its own check says so
  }
}

/** Whether a URL's query carries a key or a token (`?api_key=…`, `&token=…`). */
export function hasKeyInQuery(url: string): boolean {
  return /[?&](api[_-]?key|key|token)=/i.test(url);
}

/**
 * A URL with no `user:password@` and no key in its query: every URL a spec or the environment
 * gives mockworld. `keyGoes` says where the key goes instead; the refusal never repeats the value.
 */
export function credentialFreeUrl(keyGoes: string) {
  return z.url().refine((url) => !hasUserInfo(url) && !hasKeyInQuery(url), {
    message: `must not carry a key or a user:password (it would reach histories and logs); ${keyGoes}`,
  });
}
