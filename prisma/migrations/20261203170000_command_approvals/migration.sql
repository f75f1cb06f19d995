-- Durable pending approvals of dangerous commands (Profile spec.approvals, mode manual or an
-- escalated smart verdict): the parked tool call, who may decide it, the decision and whether
-- the waiting turn took it. A worker restart leaves the row pending; it is never approved by itself.
-- status: pending -> approved | denied | expired | cancelled | abandoned, written only by
-- services/core/ledger/approvals.ts (no CHECK constraint: Prisma's schema describer panics on one).
CREATE TABLE "command_approvals" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "admission_id" UUID NOT NULL,
    "user_id" UUID,
    "command" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "note" TEXT,
    "decided_by_admission" UUID,
    "decided_at" TIMESTAMPTZ(3),
    "consumed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "command_approvals_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "command_approvals_session_id_status_created_at_idx" ON "command_approvals"("session_id", "status", "created_at");
CREATE INDEX "command_approvals_admission_id_idx" ON "command_approvals"("admission_id");
CREATE INDEX "command_approvals_decided_by_admission_idx" ON "command_approvals"("decided_by_admission");
ALTER TABLE "command_approvals" ADD CONSTRAINT "command_approvals_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
