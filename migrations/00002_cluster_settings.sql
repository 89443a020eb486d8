-- Settings an admin changes at runtime for every replica at once (each
-- replica reads them with its membership heartbeat). A setting absent
-- here leaves each replica to its own flag.

-- +goose Up
CREATE TABLE cluster_settings (
    name   text        PRIMARY KEY CONSTRAINT cluster_settings_name CHECK (name IN ('log_level')),
    value  text        NOT NULL,
    set_by text        NOT NULL,
    set_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE cluster_settings;
