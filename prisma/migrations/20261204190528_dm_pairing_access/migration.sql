CREATE TABLE "pairing_requests" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "platform_user_id" TEXT NOT NULL,
    "display_name" TEXT,
    "code_sha256" TEXT NOT NULL,
    "reply_target" JSONB NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "reminded" BOOLEAN NOT NULL DEFAULT false,
    "decided_by" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "pairing_requests_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "paired_users" (
    "agent_id" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "platform_user_id" TEXT NOT NULL,
    "display_name" TEXT,
    "approved_by" TEXT NOT NULL,
    "approved_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "paired_users_pkey" PRIMARY KEY ("agent_id","platform","platform_user_id")
);
CREATE TABLE "pairing_locks" (
    "agent_id" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "window_started_at" TIMESTAMPTZ(3) NOT NULL,
    "locked_until" TIMESTAMPTZ(3),
    CONSTRAINT "pairing_locks_pkey" PRIMARY KEY ("agent_id","platform")
);
CREATE INDEX "pairing_requests_agent_id_platform_state_expires_at_idx" ON "pairing_requests"("agent_id", "platform", "state", "expires_at");
CREATE INDEX "pairing_requests_agent_id_code_sha256_idx" ON "pairing_requests"("agent_id", "code_sha256");
CREATE INDEX "pairing_requests_agent_id_platform_platform_user_id_created_idx" ON "pairing_requests"("agent_id", "platform", "platform_user_id", "created_at");
ALTER TABLE "pairing_requests" ADD CONSTRAINT "pairing_requests_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "paired_users" ADD CONSTRAINT "paired_users_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "pairing_locks" ADD CONSTRAINT "pairing_locks_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
