ALTER TABLE "cron_schedules" ADD COLUMN     "pending_slot" TIMESTAMPTZ(3),
ADD COLUMN     "run_now_at" TIMESTAMPTZ(3),
ADD COLUMN     "run_now_token" TEXT;
CREATE TABLE "cron_runs" (
    "id" UUID NOT NULL,
    "schedule_id" UUID NOT NULL,
    "slot" TIMESTAMPTZ(3) NOT NULL,
    "trigger" TEXT NOT NULL DEFAULT 'schedule',
    "state" TEXT NOT NULL,
    "reason" TEXT,
    "admission_id" UUID,
    "session_id" UUID,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "outcome" TEXT,
    "obligation_id" UUID,
    "delivery_state" TEXT,
    "input_tokens" INTEGER,
    "output_tokens" INTEGER,
    "cost_usd" DECIMAL(14,6),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cron_runs_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "cron_runs_admission_id_key" ON "cron_runs"("admission_id");
CREATE INDEX "cron_runs_schedule_id_state_idx" ON "cron_runs"("schedule_id", "state");
CREATE UNIQUE INDEX "cron_runs_schedule_id_slot_trigger_key" ON "cron_runs"("schedule_id", "slot", "trigger");
ALTER TABLE "cron_runs" ADD CONSTRAINT "cron_runs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "cron_schedules"("id") ON DELETE CASCADE ON UPDATE CASCADE;
