-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "session_state" AS ENUM ('active', 'resume_pending', 'suspended', 'ended');

-- CreateEnum
CREATE TYPE "message_role" AS ENUM ('system', 'user', 'assistant', 'tool');

-- CreateEnum
CREATE TYPE "effect_disposition" AS ENUM ('applied', 'none', 'unknown');

-- CreateEnum
CREATE TYPE "admission_intent" AS ENUM ('queue', 'steer', 'redirect');

-- CreateEnum
CREATE TYPE "admission_state" AS ENUM ('queued', 'started', 'unknown', 'terminal');

-- CreateEnum
CREATE TYPE "admission_outcome" AS ENUM ('completed', 'failed', 'interrupted', 'discarded');

-- CreateEnum
CREATE TYPE "instance_kind" AS ENUM ('gateway', 'worker', 'operator', 'dev');

-- CreateEnum
CREATE TYPE "delivery_state" AS ENUM ('pending', 'attempting', 'delivered', 'failed', 'abandoned');

-- CreateTable
CREATE TABLE "agents" (
    "id" UUID NOT NULL,
    "namespace" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "current_revision_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "agents_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "config_revisions" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "hash" TEXT NOT NULL,
    "compiled" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "config_revisions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "users" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "platform_user_id" TEXT NOT NULL,
    "display_name" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sessions" (
    "id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "user_id" UUID,
    "session_key" TEXT NOT NULL,
    "state" "session_state" NOT NULL DEFAULT 'active',
    "system_prompt" TEXT,
    "prompt_identity" TEXT,
    "last_seq" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_keys" (
    "agent_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "session_id" UUID NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "session_keys_pkey" PRIMARY KEY ("agent_id","key")
);

-- CreateTable
CREATE TABLE "messages" (
    "id" BIGSERIAL NOT NULL,
    "session_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" "message_role" NOT NULL,
    "content" TEXT NOT NULL DEFAULT '',
    "tool_calls" JSONB,
    "tool_call_id" TEXT,
    "effect_disposition" "effect_disposition",
    "admission_id" UUID,
    "interrupted" BOOLEAN NOT NULL DEFAULT false,
    "usage" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "inbound_events" (
    "agent_id" UUID NOT NULL,
    "source" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "admission_id" UUID NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inbound_events_pkey" PRIMARY KEY ("agent_id","source","event_id")
);

-- CreateTable
CREATE TABLE "admissions" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "agent_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "user_id" UUID,
    "platform" TEXT NOT NULL,
    "intent" "admission_intent" NOT NULL DEFAULT 'queue',
    "state" "admission_state" NOT NULL DEFAULT 'queued',
    "outcome" "admission_outcome",
    "content" TEXT NOT NULL,
    "caller_history" JSONB,
    "reply_target" JSONB,
    "trace_context" JSONB,
    "owner_instance_id" UUID,
    "owner_epoch" BIGINT,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "admissions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "worker_instances" (
    "id" UUID NOT NULL,
    "kind" "instance_kind" NOT NULL,
    "hostname" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "stopped_at" TIMESTAMPTZ(3),

    CONSTRAINT "worker_instances_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_leases" (
    "session_id" UUID NOT NULL,
    "owner_instance_id" UUID,
    "epoch" BIGINT NOT NULL DEFAULT 0,
    "acquired_at" TIMESTAMPTZ(3),
    "renewed_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),

    CONSTRAINT "session_leases_pkey" PRIMARY KEY ("session_id")
);

-- CreateTable
CREATE TABLE "delivery_obligations" (
    "id" UUID NOT NULL,
    "admission_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "message_id" BIGINT,
    "platform" TEXT NOT NULL,
    "target" JSONB,
    "content" TEXT NOT NULL,
    "state" "delivery_state" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "owner_instance_id" UUID,
    "owner_started_at" TIMESTAMPTZ(3),
    "not_before" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_error" TEXT,
    "possible_duplicate" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "delivery_obligations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "agents_namespace_name_key" ON "agents"("namespace", "name");

-- CreateIndex
CREATE UNIQUE INDEX "config_revisions_agent_id_hash_key" ON "config_revisions"("agent_id", "hash");

-- CreateIndex
CREATE UNIQUE INDEX "users_agent_id_platform_platform_user_id_key" ON "users"("agent_id", "platform", "platform_user_id");

-- CreateIndex
CREATE INDEX "sessions_agent_id_session_key_idx" ON "sessions"("agent_id", "session_key");

-- CreateIndex
CREATE UNIQUE INDEX "messages_session_id_seq_key" ON "messages"("session_id", "seq");

-- CreateIndex
CREATE INDEX "inbound_events_received_at_idx" ON "inbound_events"("received_at");

-- CreateIndex
CREATE INDEX "admissions_session_id_state_seq_idx" ON "admissions"("session_id", "state", "seq");

-- CreateIndex
CREATE INDEX "admissions_state_updated_at_idx" ON "admissions"("state", "updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "admissions_seq_key" ON "admissions"("seq");

-- CreateIndex
CREATE INDEX "worker_instances_heartbeat_at_idx" ON "worker_instances"("heartbeat_at");

-- CreateIndex
CREATE UNIQUE INDEX "delivery_obligations_admission_id_key" ON "delivery_obligations"("admission_id");

-- CreateIndex
CREATE INDEX "delivery_obligations_state_not_before_idx" ON "delivery_obligations"("state", "not_before");

-- AddForeignKey
ALTER TABLE "config_revisions" ADD CONSTRAINT "config_revisions_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session_keys" ADD CONSTRAINT "session_keys_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "admissions" ADD CONSTRAINT "admissions_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session_leases" ADD CONSTRAINT "session_leases_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "delivery_obligations" ADD CONSTRAINT "delivery_obligations_admission_id_fkey" FOREIGN KEY ("admission_id") REFERENCES "admissions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
