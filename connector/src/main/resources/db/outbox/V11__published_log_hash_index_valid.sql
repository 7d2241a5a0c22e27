-- outbox-relay schema, version 11: the published log's hash index of message ids is valid.
--
-- Version 10 creates that index IF NOT EXISTS, so that operators of a large log can build it
-- beforehand with CREATE INDEX CONCURRENTLY, and then drops the btree it replaces. A concurrent
-- build that failed or was cancelled leaves an INVALID index under the same name: IF NOT EXISTS
-- kept it, and the log had no usable message-id index (the writer library's duplicate check and
-- operators' lookups by message id then read the whole log). This rebuilds such an index, and
-- creates it if it is missing; a valid one is left as it is.

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index
             WHERE indexrelid = to_regclass('${qualifiedIndexPublishedIdHash}')
               AND NOT indisvalid) THEN
    EXECUTE 'REINDEX INDEX ${qualifiedIndexPublishedIdHash}';
  END IF;
END
$$;

CREATE INDEX IF NOT EXISTS "${tableName}_published_id_hash"
    ON ${qualifiedPublishedTable} USING hash (message_id);
