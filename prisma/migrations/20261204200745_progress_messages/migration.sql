CREATE TABLE "progress_messages" (
    "admission_id" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "target" JSONB NOT NULL,
    "message_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "progress_messages_pkey" PRIMARY KEY ("admission_id")
);
CREATE INDEX "progress_messages_created_at_idx" ON "progress_messages"("created_at");
