/** A signal or query definition with the description the Temporal UI shows beside its name. */
export type Described<D> = D & { readonly description: string };

/**
 * Attaches `description` to a signal or query definition, so the text a workflow passes to
 * `setHandler` (which the UI's signal and query lists show) is written once, beside its name.
 */
export function described<D extends { readonly type: 'signal' | 'query'; readonly name: string }>(
  definition: D,
  description: string,
): Described<D> {
  return { ...definition, description };
}
