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
