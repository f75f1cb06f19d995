CREATE TABLE "background_reviews" (
    "admission_id" UUID NOT NULL,
    "state" TEXT NOT NULL,
    "error" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "background_reviews_pkey" PRIMARY KEY ("admission_id")
);
ALTER TABLE "background_reviews" ADD CONSTRAINT "background_reviews_admission_id_fkey" FOREIGN KEY ("admission_id") REFERENCES "admissions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
