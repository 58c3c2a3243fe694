/**
 * The words of a table that gives each word its meaning, in the table's order: the tuple a vocabulary exports
 * (HTTP schemas take it as `z.enum(...)`, the database CHECKs list it), with each word documented where it is
 * defined.
 */
export function wordsOf<Word extends string>(
  meanings: Readonly<Record<Word, string>>,
): readonly [Word, ...Word[]] {
  return Object.keys(meanings) as [Word, ...Word[]]
}
