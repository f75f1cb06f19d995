ALTER TABLE "skill_versions" ADD COLUMN     "author" TEXT,
ADD COLUMN     "source_session_id" UUID;
ALTER TABLE "skills" ADD COLUMN     "pinned" BOOLEAN NOT NULL DEFAULT false;
