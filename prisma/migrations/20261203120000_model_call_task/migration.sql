-- What each model call was for, so summary calls (loop compression, /compress, hygiene
-- pre-compression) are recorded beside the turn's own calls and count toward the spend caps.
-- Rows written before this migration were all turn calls.
ALTER TABLE "model_call_usage" ADD COLUMN "task" TEXT NOT NULL DEFAULT 'turn';
