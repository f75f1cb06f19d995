ALTER TABLE "delivery_obligations" ADD COLUMN     "pieces_sent" INTEGER NOT NULL DEFAULT 0;
CREATE INDEX "delivery_obligations_session_id_created_at_idx" ON "delivery_obligations"("session_id", "created_at");
