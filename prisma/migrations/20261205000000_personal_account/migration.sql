-- The personal account (decisions.md section 8): people sign in with an e-mail and a password.

-- A password under scrypt, with its parameters (shared/auth/passwords.ts); null while the user is only invited.
ALTER TABLE "users" ADD COLUMN "password_hash" TEXT;
-- A removed member (DELETE /v1/members/{id}): kept for the records that name it (keys, generations, ledger), signs in no more.
ALTER TABLE "users" ADD COLUMN "removed_at" TIMESTAMPTZ(3);

-- One e-mail, one user in the whole installation (was: per organization). Addresses are kept in lower case; should two
-- users of different organizations share one, this migration stops here and the operator must rename one of them.
UPDATE "users" SET "email" = lower(btrim("email")) WHERE "email" <> lower(btrim("email"));
DROP INDEX "users_organization_id_email_key";
CREATE UNIQUE INDEX "users_email_key" ON "users" ("email") WHERE "removed_at" IS NULL;
CREATE INDEX "users_organization_id_idx" ON "users" ("organization_id");

-- Invite and password-reset tokens: one use each, only their SHA-256 stored.
CREATE TABLE "user_tokens" (
    "token_hash" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "user_tokens_pkey" PRIMARY KEY ("token_hash"),
    CONSTRAINT "user_tokens_kind_check" CHECK ("kind" IN ('invite', 'reset')),
    CONSTRAINT "user_tokens_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "user_tokens_user_id_idx" ON "user_tokens" ("user_id");

-- Browser sessions (the `sy_session` cookie): only the SHA-256 of the cookie's value is stored.
CREATE TABLE "sessions" (
    "token_hash" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "sessions_pkey" PRIMARY KEY ("token_hash"),
    CONSTRAINT "sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "sessions_user_id_idx" ON "sessions" ("user_id");
