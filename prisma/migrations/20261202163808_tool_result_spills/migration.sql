-- Spill-over storage of oversized tool results: the full text, read back page by page with
-- read_tool_result within the same session; removed with its session, or by the sweeper after
-- HERMES_TOOL_RESULT_RETENTION_SECONDS (24 h by default, as Hermes keeps its spill files).
CREATE TABLE "tool_result_spills" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "admission_id" UUID NOT NULL,
    "tool_call_id" TEXT NOT NULL,
    "tool_name" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tool_result_spills_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "tool_result_spills_session_id_idx" ON "tool_result_spills"("session_id");
CREATE INDEX "tool_result_spills_created_at_idx" ON "tool_result_spills"("created_at");
ALTER TABLE "tool_result_spills" ADD CONSTRAINT "tool_result_spills_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
