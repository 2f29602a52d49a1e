-- nova_bm schema as Juno's (2014.2) `nova-baremetal-manage db sync` leaves it on SQLite: nova
-- baremetal's sqlalchemy-migrate repository (repository_id 'nova_bm', versions 001..010), SQLAlchemy
-- 0.9's DDL. Held to the real one by tests/it/juno_baremetal.rs (column by column, index by index).
-- Booleans: BOOLEAN with CHECK (0, 1), except preserve_ephemeral: migration 010 adds it with ALTER
-- TABLE ... ADD COLUMN, which on SQLite carries no CHECK (server default 0). The unique constraints
-- are unnamed (SQLite's autoindexes). No foreign keys were created by the migrations.
CREATE TABLE migrate_version (
  repository_id   VARCHAR(250) NOT NULL,
  repository_path TEXT,
  version         INTEGER,
  PRIMARY KEY (repository_id)
);

CREATE TABLE bm_nodes (
  created_at         DATETIME,
  updated_at         DATETIME,
  deleted_at         DATETIME,
  deleted            BOOLEAN,
  id                 INTEGER NOT NULL,
  cpus               INTEGER,
  memory_mb          INTEGER,
  local_gb           INTEGER,
  pm_address         VARCHAR(255),
  pm_user            VARCHAR(255),
  pm_password        VARCHAR(255),
  service_host       VARCHAR(255),
  instance_uuid      VARCHAR(36),
  task_state         VARCHAR(255),
  terminal_port      INTEGER,
  image_path         VARCHAR(255),      -- 002
  pxe_config_path    VARCHAR(255),      -- 002
  deploy_key         VARCHAR(255),      -- 002
  root_mb            INTEGER,           -- 002
  swap_mb            INTEGER,           -- 002
  uuid               VARCHAR(36),       -- 003
  instance_name      VARCHAR(255),      -- 004
  ephemeral_mb       INTEGER,           -- 009
  preserve_ephemeral BOOLEAN DEFAULT 0, -- 010
  PRIMARY KEY (id),
  CHECK (deleted IN (0, 1))
);
CREATE INDEX idx_bm_nodes_service_host_deleted ON bm_nodes (service_host, deleted);
CREATE INDEX idx_bm_nodes_instance_uuid_deleted ON bm_nodes (instance_uuid, deleted);
CREATE INDEX idx_bm_nodes_hmcld ON bm_nodes (service_host, memory_mb, cpus, local_gb, deleted);
CREATE INDEX deploy_key_idx ON bm_nodes (deploy_key);
CREATE UNIQUE INDEX uuid_ux ON bm_nodes (uuid);

CREATE TABLE bm_interfaces (
  created_at  DATETIME,
  updated_at  DATETIME,
  deleted_at  DATETIME,
  deleted     BOOLEAN,
  id          INTEGER NOT NULL,
  bm_node_id  INTEGER,
  address     VARCHAR(255),
  datapath_id VARCHAR(255),
  port_no     INTEGER,
  vif_uuid    VARCHAR(36),
  PRIMARY KEY (id),
  CHECK (deleted IN (0, 1)),
  UNIQUE (address),
  UNIQUE (vif_uuid)
);
CREATE INDEX idx_bm_interfaces_bm_node_id_deleted ON bm_interfaces (bm_node_id, deleted);
