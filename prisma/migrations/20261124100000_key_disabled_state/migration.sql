-- Revocation is final and disabling is a separate, reversible state (issue 10.2). Until now PATCH
-- {"disabled": true|false} toggled revoked_at, so a member could revive a key an admin had revoked. Keys revoked
-- before this migration stay revoked (we cannot tell which were only disabled: the safe reading is final).
ALTER TABLE "api_keys" ADD COLUMN "disabled_at" TIMESTAMPTZ(3);
-- The restrictions an owner or admin set on the key (limit, allowed_models, rate_limit_per_minute, disabled):
-- its member may tighten these, never loosen them (docs/key-permissions.md).
ALTER TABLE "api_keys" ADD COLUMN "locked_fields" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[];
