ALTER TABLE "skills" ADD COLUMN     "curator_state" TEXT NOT NULL DEFAULT 'active',
ADD COLUMN     "last_used_at" TIMESTAMPTZ(3);
