-- CreateEnum
CREATE TYPE "Role" AS ENUM ('owner', 'admin', 'member');
CREATE TYPE "LimitReset" AS ENUM ('daily', 'weekly', 'monthly', 'never');
CREATE TYPE "GenerationStatus" AS ENUM ('pending', 'processing', 'completed', 'failed', 'cancelled');
CREATE TYPE "ReservationStatus" AS ENUM ('held', 'charged', 'released');
CREATE TYPE "LedgerKind" AS ENUM ('topup', 'reserve', 'charge', 'release');
CREATE TYPE "FileType" AS ENUM ('IMAGE', 'VIDEO', 'AUDIO');
CREATE TYPE "FileSource" AS ENUM ('USER_UPLOAD', 'AI_GENERATION');
CREATE TYPE "StoragePolicy" AS ENUM ('TEMP_UPLOAD', 'TEMP_GENERATION', 'PERMANENT');

-- CreateTable
CREATE TABLE "organizations" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "balance" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "reserved" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "spent" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "callback_secret" TEXT NOT NULL,
    "rate_limit_per_minute" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "organizations_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "users" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "role" "Role" NOT NULL,
    "limit" DECIMAL(30,10),
    "limit_reset" "LimitReset",
    "period_start" TIMESTAMPTZ(3),
    "period_spent" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "reserved" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "user_id" TEXT,
    "creator_user_id" TEXT,
    "name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "limit" DECIMAL(30,10),
    "limit_reset" "LimitReset",
    "period_start" TIMESTAMPTZ(3),
    "period_spent" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "reserved" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "usage" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "allowed_models" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "rate_limit_per_minute" INTEGER,
    "revoked_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "reservations" (
    "generation_id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "api_key_id" TEXT,
    "user_id" TEXT,
    "amount" DECIMAL(30,10) NOT NULL,
    "charged" DECIMAL(30,10),
    "uncollected" DECIMAL(30,10),
    "status" "ReservationStatus" NOT NULL DEFAULT 'held',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "settled_at" TIMESTAMPTZ(3),
    CONSTRAINT "reservations_pkey" PRIMARY KEY ("generation_id")
);

CREATE TABLE "ledger_entries" (
    "id" BIGSERIAL NOT NULL,
    "organization_id" TEXT NOT NULL,
    "api_key_id" TEXT,
    "user_id" TEXT,
    "generation_id" TEXT,
    "kind" "LedgerKind" NOT NULL,
    "amount" DECIMAL(30,10) NOT NULL,
    "reserved_delta" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "ledger_entries_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "generations" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "api_key_id" TEXT,
    "user_id" TEXT,
    "model" TEXT NOT NULL,
    "unified_model_id" TEXT NOT NULL,
    "model_display_name" TEXT NOT NULL,
    "request_type" TEXT NOT NULL,
    "api_type" TEXT NOT NULL,
    "response_mode" TEXT NOT NULL,
    "status" "GenerationStatus" NOT NULL DEFAULT 'pending',
    "finish_reason" TEXT,
    "provider" TEXT,
    "final_endpoint_slug" TEXT,
    "usage" JSONB,
    "client_cost" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "reserved_amount" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "request" JSONB NOT NULL,
    "result" JSONB,
    "error" JSONB,
    "warnings" JSONB,
    "routing" JSONB,
    "attempts_count" INTEGER NOT NULL DEFAULT 0,
    "latency_ms" INTEGER,
    "queue_time_ms" INTEGER,
    "generation_time_ms" INTEGER,
    "is_cancelled" BOOLEAN NOT NULL DEFAULT false,
    "call_back_url" TEXT,
    "source_generation_id" TEXT,
    "previous_response_id" TEXT,
    "upstream_id" TEXT,
    "trace_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    CONSTRAINT "generations_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "stored_files" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "user_id" TEXT,
    "api_key_id" TEXT,
    "generation_id" TEXT,
    "file_type" "FileType" NOT NULL,
    "mime_type" TEXT NOT NULL,
    "source" "FileSource" NOT NULL,
    "storage_policy" "StoragePolicy" NOT NULL,
    "storage_key" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "external_user_id" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "stored_files_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "users_organization_id_email_key" ON "users"("organization_id", "email");
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");
CREATE INDEX "api_keys_organization_id_idx" ON "api_keys"("organization_id");
CREATE INDEX "reservations_status_created_at_idx" ON "reservations"("status", "created_at");
CREATE UNIQUE INDEX "ledger_entries_generation_id_kind_key" ON "ledger_entries"("generation_id", "kind");
CREATE INDEX "ledger_entries_organization_id_created_at_idx" ON "ledger_entries"("organization_id", "created_at");
CREATE INDEX "ledger_entries_api_key_id_created_at_idx" ON "ledger_entries"("api_key_id", "created_at");
CREATE INDEX "generations_organization_id_created_at_idx" ON "generations"("organization_id", "created_at" DESC);
CREATE INDEX "generations_api_key_id_created_at_idx" ON "generations"("api_key_id", "created_at" DESC);
CREATE INDEX "generations_organization_id_status_created_at_idx" ON "generations"("organization_id", "status", "created_at" DESC);
CREATE INDEX "generations_organization_id_request_type_created_at_idx" ON "generations"("organization_id", "request_type", "created_at" DESC);
CREATE INDEX "generations_organization_id_client_cost_idx" ON "generations"("organization_id", "client_cost");
CREATE INDEX "stored_files_organization_id_created_at_idx" ON "stored_files"("organization_id", "created_at" DESC);
CREATE INDEX "stored_files_expires_at_idx" ON "stored_files"("expires_at");

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "generations" ADD CONSTRAINT "generations_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "stored_files" ADD CONSTRAINT "stored_files_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
