CREATE TABLE "memory_revisions" (
    "id" BIGSERIAL NOT NULL,
    "agent_id" UUID NOT NULL,
    "target" TEXT NOT NULL,
    "owner_key" TEXT NOT NULL,
    "user_id" UUID,
    "revision" INTEGER NOT NULL,
    "entries" JSONB NOT NULL,
    "author_session_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "memory_revisions_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "memory_revisions_agent_id_target_owner_key_revision_key" ON "memory_revisions"("agent_id", "target", "owner_key", "revision");
ALTER TABLE "memory_revisions" ADD CONSTRAINT "memory_revisions_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "memory_revisions" ADD CONSTRAINT "memory_revisions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
