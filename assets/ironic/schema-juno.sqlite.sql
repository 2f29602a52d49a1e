-- Ironic Juno (2014.2) schema at alembic head 487deb87cc9d on SQLite, as Juno's own `ironic-dbsync
-- upgrade` makes it (scripts/juno.sh; two migrations given a SQLite branch): tests/it/juno.rs checks
-- that it still is (columns, indexes, keys, checks). A test fixture, not upstream code.
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);
INSERT INTO alembic_version (version_num) VALUES ('487deb87cc9d');
CREATE TABLE chassis (
  id INTEGER NOT NULL PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  extra TEXT NULL,
  description VARCHAR(255) NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_chassis0uuid UNIQUE (uuid)
);
CREATE TABLE conductors (
  id INTEGER NOT NULL PRIMARY KEY,
  hostname VARCHAR(255) NOT NULL,
  drivers TEXT NULL,
  online BOOLEAN NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_conductors0hostname UNIQUE (hostname)
);
CREATE TABLE nodes (
  id INTEGER NOT NULL PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  instance_uuid VARCHAR(36) NULL,
  chassis_id INTEGER NULL REFERENCES chassis (id),
  power_state VARCHAR(15) NULL,
  target_power_state VARCHAR(15) NULL,
  provision_state VARCHAR(15) NULL,
  target_provision_state VARCHAR(15) NULL,
  provision_updated_at DATETIME NULL,
  last_error TEXT NULL,
  instance_info TEXT NULL,
  properties TEXT NULL,
  driver VARCHAR(15) NULL,
  driver_info TEXT NULL,
  reservation VARCHAR(255) NULL,
  conductor_affinity INTEGER NULL CONSTRAINT nodes_conductor_affinity_fk REFERENCES conductors (id),
  maintenance BOOLEAN NULL,
  console_enabled BOOLEAN NULL,
  extra TEXT NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_nodes0uuid UNIQUE (uuid),
  CHECK (maintenance IN (0, 1))
);
-- migration 3bea56f25597 on SQLite: a unique index under the constraint's name
CREATE UNIQUE INDEX uniq_nodes0instance_uuid ON nodes (instance_uuid);
CREATE TABLE ports (
  id INTEGER NOT NULL PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  address VARCHAR(18) NULL,
  node_id INTEGER NULL REFERENCES nodes (id),
  extra TEXT NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_ports0uuid UNIQUE (uuid),
  CONSTRAINT uniq_ports0address UNIQUE (address)
);
