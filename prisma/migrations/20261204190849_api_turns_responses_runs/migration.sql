CREATE TABLE "api_turns" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "agent_id" UUID NOT NULL,
    "admission_id" UUID NOT NULL,
    "key_id" TEXT NOT NULL,
    "api_user" TEXT,
    "conversation" TEXT NOT NULL,
    "previous_id" TEXT,
    "idempotency_key" TEXT,
    "request_hash" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "instructions" TEXT,
    "store" BOOLEAN NOT NULL DEFAULT true,
    "metadata" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),
    CONSTRAINT "api_turns_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "api_turns_admission_id_idx" ON "api_turns"("admission_id");
CREATE UNIQUE INDEX "api_turns_key_id_kind_idempotency_key_key" ON "api_turns"("key_id", "kind", "idempotency_key");
CREATE INDEX "sessions_user_id_created_at_idx" ON "sessions"("user_id", "created_at");
ALTER TABLE "api_turns" ADD CONSTRAINT "api_turns_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "api_turns" ADD CONSTRAINT "api_turns_admission_id_fkey" FOREIGN KEY ("admission_id") REFERENCES "admissions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
