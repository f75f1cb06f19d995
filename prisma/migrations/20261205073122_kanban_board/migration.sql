-- The Kanban board (issue 15, docs/kanban.md): boards owned by an agent (and, for chat, one person),
-- tasks with Hermes' states and block kinds, dependency links, comments, attachments by reference,
-- dispatch runs and the event log. Times are written by the caller (the dispatcher's clock).
CREATE TYPE "kanban_status" AS ENUM ('triage', 'todo', 'scheduled', 'ready', 'running', 'blocked', 'review', 'done', 'archived');
CREATE TYPE "kanban_block_kind" AS ENUM ('dependency', 'needs_input', 'capability', 'transient');
CREATE TYPE "kanban_run_status" AS ENUM ('claimed', 'running', 'ended');
CREATE TABLE "kanban_boards" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "owner_user_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "kanban_boards_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "kanban_tasks" (
    "id" TEXT NOT NULL,
    "board_id" UUID NOT NULL,
    "title" TEXT NOT NULL,
    "body" TEXT,
    "assignee_agent_id" UUID,
    "status" "kanban_status" NOT NULL DEFAULT 'todo',
    "block_kind" "kanban_block_kind",
    "block_reason" TEXT,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "idempotency_key" TEXT,
    "created_by" TEXT NOT NULL,
    "max_runtime_seconds" INTEGER,
    "max_retries" INTEGER,
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "unblocks" INTEGER NOT NULL DEFAULT 0,
    "scheduled_at" TIMESTAMPTZ(3),
    "current_run_id" UUID,
    "claim_lock" UUID,
    "claim_expires_at" TIMESTAMPTZ(3),
    "result" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "completed_at" TIMESTAMPTZ(3),
    CONSTRAINT "kanban_tasks_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "kanban_links" (
    "parent_id" TEXT NOT NULL,
    "child_id" TEXT NOT NULL,
    CONSTRAINT "kanban_links_pkey" PRIMARY KEY ("parent_id","child_id")
);
CREATE TABLE "kanban_comments" (
    "id" BIGSERIAL NOT NULL,
    "task_id" TEXT NOT NULL,
    "author" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "kanban_comments_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "kanban_attachments" (
    "id" BIGSERIAL NOT NULL,
    "task_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "ref" TEXT NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "kanban_attachments_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "kanban_runs" (
    "id" UUID NOT NULL,
    "task_id" TEXT NOT NULL,
    "agent_id" UUID NOT NULL,
    "admission_id" UUID,
    "status" "kanban_run_status" NOT NULL DEFAULT 'claimed',
    "outcome" TEXT,
    "infrastructure" BOOLEAN NOT NULL DEFAULT false,
    "summary" TEXT,
    "error" TEXT,
    "metadata" JSONB,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),
    CONSTRAINT "kanban_runs_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "kanban_events" (
    "id" BIGSERIAL NOT NULL,
    "task_id" TEXT NOT NULL,
    "run_id" UUID,
    "kind" TEXT NOT NULL,
    "data" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "kanban_events_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "kanban_boards_agent_id_name_key" ON "kanban_boards"("agent_id", "name");
CREATE INDEX "kanban_tasks_status_priority_idx" ON "kanban_tasks"("status", "priority");
CREATE INDEX "kanban_tasks_board_id_status_idx" ON "kanban_tasks"("board_id", "status");
CREATE INDEX "kanban_tasks_board_id_idempotency_key_idx" ON "kanban_tasks"("board_id", "idempotency_key");
CREATE INDEX "kanban_links_child_id_idx" ON "kanban_links"("child_id");
CREATE INDEX "kanban_comments_task_id_id_idx" ON "kanban_comments"("task_id", "id");
CREATE INDEX "kanban_attachments_task_id_idx" ON "kanban_attachments"("task_id");
CREATE INDEX "kanban_runs_status_idx" ON "kanban_runs"("status");
CREATE INDEX "kanban_runs_task_id_idx" ON "kanban_runs"("task_id");
CREATE INDEX "kanban_runs_admission_id_idx" ON "kanban_runs"("admission_id");
CREATE INDEX "kanban_events_task_id_id_idx" ON "kanban_events"("task_id", "id");
ALTER TABLE "kanban_boards" ADD CONSTRAINT "kanban_boards_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_tasks" ADD CONSTRAINT "kanban_tasks_board_id_fkey" FOREIGN KEY ("board_id") REFERENCES "kanban_boards"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_links" ADD CONSTRAINT "kanban_links_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "kanban_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_links" ADD CONSTRAINT "kanban_links_child_id_fkey" FOREIGN KEY ("child_id") REFERENCES "kanban_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_comments" ADD CONSTRAINT "kanban_comments_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "kanban_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_attachments" ADD CONSTRAINT "kanban_attachments_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "kanban_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_runs" ADD CONSTRAINT "kanban_runs_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "kanban_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "kanban_events" ADD CONSTRAINT "kanban_events_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "kanban_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
