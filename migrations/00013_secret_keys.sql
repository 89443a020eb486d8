-- Data keys of secret values (see server/internal/secret).
--
-- A secret property's value is stored sealed by a data key; the data key
-- is stored here only wrapped (AES-256-GCM) by a key-encryption key the
-- server reads from --secret-key-file or CONVERGE_SECRET_KEY, which never
-- reaches the database. One data key per key-encryption key: kek_id is
-- unique, so replicas starting together with a new key agree on one.

-- +goose Up
CREATE TABLE secret_keys (
    id text PRIMARY KEY,
    kek_id text NOT NULL UNIQUE,
    wrapped bytea NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE secret_keys;
