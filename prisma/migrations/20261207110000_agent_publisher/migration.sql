-- Who published an agent's current revision: 'operator' (from an Agent resource) or 'hermes-dev'
-- (from a folder of manifests). `hermes dev` turns off the agents it published itself that its
-- folder no longer declares (current_revision_id set to NULL, their data kept), and never touches
-- an agent the operator published. Rows written before this column are NULL: neither's, so left alone.
ALTER TABLE "agents" ADD COLUMN "published_by" TEXT;
