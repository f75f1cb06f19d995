CREATE TABLE "learning_writes" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "user_id" UUID,
    "payload" JSONB NOT NULL,
    "diff" TEXT NOT NULL,
    "content_hash" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "source_session_id" UUID,
    "decided_by" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "result" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "learning_writes_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "learning_writes_agent_id_state_created_at_idx" ON "learning_writes"("agent_id", "state", "created_at");
ALTER TABLE "learning_writes" ADD CONSTRAINT "learning_writes_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
