-- The session's todo list (the todo tool), moved out of the worker's memory: one row per session,
-- the list as JSON and a revision bumped on each change; removed with its session.
CREATE TABLE "session_todos" (
    "session_id" UUID NOT NULL,
    "items" JSONB NOT NULL DEFAULT '[]',
    "revision" INTEGER NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "session_todos_pkey" PRIMARY KEY ("session_id")
);
ALTER TABLE "session_todos" ADD CONSTRAINT "session_todos_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
