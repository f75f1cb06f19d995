-- session_search: full-text search over stored messages ('simple' configuration: no stemming,
-- no stop words, the same for every language) and trigram matching (pg_trgm, a trusted
-- extension: any owner of the database may create it) for text without word boundaries.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The full-text index is an expression Prisma cannot describe; its diff ignores it.
CREATE INDEX "messages_content_fts_idx" ON "messages" USING GIN (to_tsvector('simple', "content"));

CREATE INDEX "messages_content_trgm_idx" ON "messages" USING GIN ("content" gin_trgm_ops);
