/**
 * A list page is bounded in bytes as well as in items: it holds `limit` items, or fewer once they come to about
 * PAGE_BYTES of JSON, and the cursor continues where it stopped. Without the byte bound a page of 500 large items
 * (signed manifests of megabytes, outcomes with their evidence) is built in memory whole, and a few concurrent
 * requests for such pages exhaust the process.
 *
 * The bound is applied by the database, before any item's columns are read: an inner statement picks the page's
 * ids in list order with an estimate of each item's JSON size computed from the stored columns alone, window
 * functions add the sizes up, and only the items whose running total stays within the bound are read whole (the
 * first item always, however large, so that a list always moves on). Each row also carries `page_rows`, the number
 * of items the page held before the byte bound cut it, from which the pager tells that more items follow.
 */
export const PAGE_BYTES = 4 * 1024 * 1024

export interface BoundedPageSpec {
  /** The table the list is of, and the alias the statement's other parts use for it. */
  table: string
  alias: string
  /** The table's unique key column (default `id`). */
  key?: string
  /** The select list of the page's rows (columns qualified by the alias, or correlated subqueries on it). */
  columns: string
  /** The filter (may use the alias); its parameters are the caller's. */
  where: string
  /** The list order: columns of the table, ascending, the last ones unique together. */
  order: string[]
  /** An estimate of one item's JSON size in bytes from its stored columns (may use the alias). */
  itemBytes: string
  /** The parameter holding the page's item limit (e.g. `$9`). */
  limit: string
  /** The byte bound; PAGE_BYTES unless a caller needs another. */
  maxBytes?: number
}

/** The page statement of `spec` (see above): its rows are the page in list order, each with `page_rows`. */
export function boundedPageQuery(spec: BoundedPageSpec): string {
  const { table, alias: a } = spec
  const key = spec.key ?? 'id'
  const ordered = spec.order.map((column, i) => ({ column, name: `page_o${i}` }))
  const innerOrder = ordered.map((o) => `l.${o.name}`).join(', ')
  return `SELECT ${spec.columns}, w.page_rows FROM (
    SELECT l.page_key, ${innerOrder},
      (count(*) OVER ())::int AS page_rows,
      row_number() OVER (ORDER BY ${innerOrder}) AS page_row,
      sum(l.page_item_bytes) OVER (ORDER BY ${innerOrder} ROWS UNBOUNDED PRECEDING) AS page_bytes
    FROM (SELECT ${a}.${key} AS page_key, ${ordered.map((o) => `${a}.${o.column} AS ${o.name}`).join(', ')},
            (${spec.itemBytes})::bigint AS page_item_bytes
          FROM ${table} ${a} WHERE ${spec.where}
          ORDER BY ${ordered.map((o) => `${a}.${o.column}`).join(', ')} LIMIT ${spec.limit}) l
  ) w JOIN ${table} ${a} ON ${a}.${key} = w.page_key
  WHERE w.page_row = 1 OR w.page_bytes <= ${spec.maxBytes ?? PAGE_BYTES}
  ORDER BY ${ordered.map((o) => `w.${o.name}`).join(', ')}`
}
