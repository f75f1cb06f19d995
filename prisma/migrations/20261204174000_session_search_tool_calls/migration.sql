-- session_search matches tool-call arguments too: a trigram index on their JSON text, so that
-- branch of the search is an index scan like the others. An expression Prisma cannot describe;
-- its diff ignores it.
CREATE INDEX "messages_tool_calls_trgm_idx" ON "messages" USING GIN (("tool_calls"::text) gin_trgm_ops) WHERE "tool_calls" IS NOT NULL;
