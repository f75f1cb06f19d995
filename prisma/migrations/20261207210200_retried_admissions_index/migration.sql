-- Every turn reads which admissions of its session a later `/retry` replaced (hermes_turn_context):
-- the admissions of the session that continue or re-run another. Without this index that read
-- walks every admission the session ever had, so each turn of a long conversation cost more than
-- the one before. A partial index (a WHERE clause Prisma's schema cannot describe; its diff
-- ignores it) holds only those few rows.
CREATE INDEX "admissions_session_id_resumes_idx" ON "admissions"("session_id") WHERE "resume_of" IS NOT NULL;
