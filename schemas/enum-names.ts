/**
 * `KEYWORD_LIST` -> `KeywordList`: Temporal's proto enum names as its CLI and its UI spell them.
 * Pure; shared by the client (workflow task failure causes) and deploy (search attribute types).
 */
export function pascalCaseOf(screamingSnake: string): string {
  return screamingSnake.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}
