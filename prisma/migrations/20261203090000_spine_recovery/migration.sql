-- Recovery without waiting (issue 9): resumes of turns cut by a shutdown, /retry links, the
-- shutdown-cut streak that suspends a session, and a deadline on every delivery attempt.
ALTER TYPE "admission_intent" ADD VALUE 'resume';

ALTER TABLE "sessions" ADD COLUMN "shutdown_cuts" INTEGER NOT NULL DEFAULT 0;

ALTER TABLE "admissions" ADD COLUMN "resume_of" UUID;
CREATE INDEX "admissions_resume_of_idx" ON "admissions"("resume_of");

ALTER TABLE "delivery_obligations" ADD COLUMN "attempt_expires_at" TIMESTAMPTZ(3);
