-- Agent loop (issue 4): control signals and per-call model usage.
CREATE TABLE "session_signals" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "admission_id" UUID,
    "admission_seq" BIGINT,
    "kind" TEXT NOT NULL,
    "text" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "consumed_at" TIMESTAMPTZ(3),
    "consumed_by" UUID,
    CONSTRAINT "session_signals_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "model_call_usage" (
    "id" BIGSERIAL NOT NULL,
    "agent_id" UUID NOT NULL,
    "profile_key" TEXT NOT NULL,
    "session_id" UUID NOT NULL,
    "user_id" UUID,
    "admission_id" UUID,
    "provider" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "input_tokens" INTEGER NOT NULL,
    "output_tokens" INTEGER NOT NULL,
    "cache_read_tokens" INTEGER NOT NULL,
    "cache_write_tokens" INTEGER NOT NULL,
    "reasoning_tokens" INTEGER NOT NULL,
    "cost_usd" DECIMAL(14,6),
    "cost_status" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "model_call_usage_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "session_signals_session_id_created_at_idx" ON "session_signals"("session_id", "created_at");
CREATE INDEX "model_call_usage_agent_id_created_at_idx" ON "model_call_usage"("agent_id", "created_at");
CREATE INDEX "model_call_usage_profile_key_created_at_idx" ON "model_call_usage"("profile_key", "created_at");
CREATE INDEX "model_call_usage_user_id_created_at_idx" ON "model_call_usage"("user_id", "created_at");
CREATE INDEX "model_call_usage_session_id_idx" ON "model_call_usage"("session_id");
