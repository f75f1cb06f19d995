-- Issue 14: clarify and send_message.
-- 1. Delivery obligations beyond the turn's one reply: a clarify question and each send_message
--    call are obligations of the turn that made them, told apart by `call_key` ('' = the turn's
--    reply, 'clarify:<id>', 'send:<tool call id>'). The unique (admission_id, call_key) makes a
--    send keyed to its tool call: recording it twice is one obligation, so it is never sent twice.
ALTER TABLE "delivery_obligations" ADD COLUMN "call_key" TEXT NOT NULL DEFAULT '';
DROP INDEX "delivery_obligations_admission_id_key";
CREATE UNIQUE INDEX "delivery_obligations_admission_id_call_key_key" ON "delivery_obligations"("admission_id", "call_key");

-- 2. Durable clarify questions: the parked tool call, who may answer it (the asking turn's user),
-- the answer and whether the waiting turn took it. A worker restart leaves the row open; the turn
-- resumed after a shutdown takes it over (admission_id moves to the resuming admission).
-- status: pending -> answered | expired | cancelled | abandoned, written only by
-- services/core/ledger/clarifications.ts (no CHECK constraint: Prisma's schema describer panics on one).
CREATE TABLE "clarifications" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "admission_id" UUID NOT NULL,
    "user_id" UUID,
    "question" TEXT NOT NULL,
    "choices" JSONB,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "answer" TEXT,
    "answered_by_admission" UUID,
    "answered_at" TIMESTAMPTZ(3),
    "consumed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "clarifications_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "clarifications_session_id_status_created_at_idx" ON "clarifications"("session_id", "status", "created_at");
CREATE INDEX "clarifications_admission_id_idx" ON "clarifications"("admission_id");
CREATE INDEX "clarifications_answered_by_admission_idx" ON "clarifications"("answered_by_admission");
ALTER TABLE "clarifications" ADD CONSTRAINT "clarifications_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
