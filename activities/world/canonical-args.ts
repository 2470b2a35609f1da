import { canonicalJson, sha256 } from '../llm/cache-key.js';

/**
 * Canonical form of a tool call's arguments: JSON with keys sorted at every depth and no
 * whitespace. Two calls that differ only in key order or formatting are the same call `u` of the
 * task mapping (seed eq. 4), so they must share one entry and one response.
 */
export function canonicalArgs(args: unknown): string {
  return canonicalJson(args);
}

/** `args_key` of the mapping: sha256 (hex) of {@link canonicalArgs}. */
export function argsKey(args: unknown): string {
  return sha256(canonicalArgs(args));
}
