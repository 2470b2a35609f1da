/**
 * A short answer normalized for exact match, as the usual open-domain QA scoring does it: case and
 * accents folded, punctuation dropped, the articles a/an/the dropped, white space collapsed. So
 * "The Eiffel Tower." and "eiffel tower" match; "Eiffel Tower, Paris" and "Eiffel Tower" do not
 * (the judge decides those).
 */
export function normalizeAnswer(answer: string): string {
  return answer
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/\\text\{([^}]*)\}/g, '$1')
    .replace(/[\p{P}\p{S}]+/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
