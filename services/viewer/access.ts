/**
 * Who may read the viewer. On a loopback address anyone on the machine may (the Temporal UI's
 * own rule); any other address needs a token, given once as `?token=` (then kept in an HttpOnly
 * cookie) or as `Authorization: Bearer`. Compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** Names of the loopback interfaces the viewer serves without a token. */
export const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '::1'] as const;

/** True for an address only this machine can reach. */
export function isLoopback(host: string): boolean {
  return (LOOPBACK_HOSTS as readonly string[]).includes(host) || /^127\./.test(host);
}

/** The refusal when a non-loopback address is asked for without a token. */
export class ViewerAccessError extends Error {
  constructor(host: string) {
    super(
      `--host ${host} opens the viewer (every run's tasks, transcripts and metrics) to the network: ` +
        'set MOCKWORLD_VIEWER_TOKEN first; users then open the link with ?token=<it> once',
    );
    this.name = 'ViewerAccessError';
  }
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** The cookie that carries the token after the first visit. */
export const TOKEN_COOKIE = 'mockworld_viewer';

/** A checker of presented tokens; with no token configured, every request passes. */
export function tokenCheck(token: string | undefined): (presented: string | undefined) => boolean {
  if (token === undefined) return () => true;
  const want = digest(token);
  return (presented) => presented !== undefined && timingSafeEqual(digest(presented), want);
}
