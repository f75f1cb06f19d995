-- Operator (issue 5): skills with versioned content, compiled cron schedules.
CREATE TABLE "skills" (
    "id" UUID NOT NULL,
    "namespace" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "skill_name" TEXT NOT NULL,
    "current_version" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "trust" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "skills_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "skill_versions" (
    "id" UUID NOT NULL,
    "skill_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "content" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "skill_versions_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "cron_schedules" (
    "id" UUID NOT NULL,
    "namespace" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "agent_name" TEXT NOT NULL,
    "schedule" TEXT NOT NULL,
    "time_zone" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "hash" TEXT NOT NULL,
    "suspend" BOOLEAN NOT NULL DEFAULT false,
    "next_run_at" TIMESTAMPTZ(3),
    "last_run_at" TIMESTAMPTZ(3),
    "last_status" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cron_schedules_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "skills_namespace_skill_name_idx" ON "skills"("namespace", "skill_name");
CREATE UNIQUE INDEX "skills_namespace_name_key" ON "skills"("namespace", "name");
CREATE UNIQUE INDEX "skill_versions_skill_id_version_key" ON "skill_versions"("skill_id", "version");
CREATE UNIQUE INDEX "skill_versions_skill_id_hash_key" ON "skill_versions"("skill_id", "hash");
CREATE INDEX "cron_schedules_suspend_next_run_at_idx" ON "cron_schedules"("suspend", "next_run_at");
CREATE UNIQUE INDEX "cron_schedules_namespace_name_key" ON "cron_schedules"("namespace", "name");
ALTER TABLE "skill_versions" ADD CONSTRAINT "skill_versions_skill_id_fkey" FOREIGN KEY ("skill_id") REFERENCES "skills"("id") ON DELETE CASCADE ON UPDATE CASCADE;
