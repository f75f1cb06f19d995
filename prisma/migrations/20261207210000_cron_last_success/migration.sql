-- When a run of the CronJob last completed, kept on the schedule: the run rows go with the history
-- limits (successfulRunsHistoryLimit 0 keeps none), and status.lastSuccessfulTime must not.
-- AlterTable
ALTER TABLE "cron_schedules" ADD COLUMN     "last_success_at" TIMESTAMPTZ(3);
