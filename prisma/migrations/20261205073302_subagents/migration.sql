-- Delegation (issue 14): one row per child of delegate_task. The child is an admission of its own
-- in a session of its own (platform `subagent`), run by any worker through the turn queue; this
-- row links it to the parent session and turn and carries its status, result and heartbeat.
CREATE TYPE "subagent_status" AS ENUM ('queued', 'running', 'completed', 'failed', 'stopped');

CREATE TABLE "subagents" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "parent_session_id" UUID NOT NULL,
    "parent_admission_id" UUID NOT NULL,
    "child_session_id" UUID NOT NULL,
    "child_admission_id" UUID NOT NULL,
    "goal" TEXT NOT NULL,
    "status" "subagent_status" NOT NULL DEFAULT 'queued',
    "result" TEXT,
    "error" TEXT,
    "heartbeat_at" TIMESTAMPTZ(3),
    "stop_requested_at" TIMESTAMPTZ(3),
    "reported_admission_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "subagents_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "subagents_child_admission_id_key" ON "subagents"("child_admission_id");
CREATE INDEX "subagents_parent_session_id_status_idx" ON "subagents"("parent_session_id", "status");
CREATE INDEX "subagents_parent_admission_id_idx" ON "subagents"("parent_admission_id");
CREATE INDEX "subagents_status_heartbeat_at_idx" ON "subagents"("status", "heartbeat_at");
ALTER TABLE "subagents" ADD CONSTRAINT "subagents_parent_session_id_fkey" FOREIGN KEY ("parent_session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "subagents" ADD CONSTRAINT "subagents_child_session_id_fkey" FOREIGN KEY ("child_session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
