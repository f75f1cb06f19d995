-- Indexes the hot path and the sweeper need as tables grow: a settled turn's final usage is read
-- by admission (it was a sequential scan of every message), and the sweeper looks at unexpired
-- leases only.
CREATE INDEX "messages_admission_id_idx" ON "messages"("admission_id");
CREATE INDEX "session_leases_expires_at_idx" ON "session_leases"("expires_at");
