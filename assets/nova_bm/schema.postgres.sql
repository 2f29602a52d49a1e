-- nova_bm schema as left by nova baremetal's sqlalchemy-migrate repo after
-- versions 001..010 (Icehouse/Juno, repository_id 'nova_bm'). Written by hand from
-- the upstream migration descriptions (see spec/DOMAIN.md); NOT upstream code.
-- PostgreSQL variant: Boolean -> BOOLEAN, DateTime -> TIMESTAMP WITHOUT TIME ZONE,
-- Integer PK -> SERIAL. No foreign keys were created by the migrations. Not compared with Juno's own
-- dbsync (the Juno Nova venv has no psycopg2); the SQLite and MariaDB variants are
-- (tests/it/juno_baremetal.rs).
CREATE TABLE migrate_version (
  repository_id   VARCHAR(250) NOT NULL PRIMARY KEY,
  repository_path TEXT,
  version         INT
);

CREATE TABLE bm_nodes (
  created_at         TIMESTAMP WITHOUT TIME ZONE NULL,
  updated_at         TIMESTAMP WITHOUT TIME ZONE NULL,
  deleted_at         TIMESTAMP WITHOUT TIME ZONE NULL,
  deleted            BOOLEAN NULL,
  id                 SERIAL NOT NULL,
  cpus               INT NULL,
  memory_mb          INT NULL,
  local_gb           INT NULL,
  pm_address         VARCHAR(255) NULL,
  pm_user            VARCHAR(255) NULL,
  pm_password        VARCHAR(255) NULL,
  service_host       VARCHAR(255) NULL,
  instance_uuid      VARCHAR(36) NULL,
  task_state         VARCHAR(255) NULL,
  terminal_port      INT NULL,
  image_path         VARCHAR(255) NULL,      -- 002
  pxe_config_path    VARCHAR(255) NULL,      -- 002
  deploy_key         VARCHAR(255) NULL,      -- 002
  root_mb            INT NULL,               -- 002
  swap_mb            INT NULL,               -- 002
  uuid               VARCHAR(36) NULL,       -- 003
  instance_name      VARCHAR(255) NULL,      -- 004
  ephemeral_mb       INT NULL,               -- 009
  preserve_ephemeral BOOLEAN NULL DEFAULT false, -- 010
  PRIMARY KEY (id)
);
CREATE INDEX idx_bm_nodes_service_host_deleted ON bm_nodes (service_host, deleted);
CREATE INDEX idx_bm_nodes_instance_uuid_deleted ON bm_nodes (instance_uuid, deleted);
CREATE INDEX idx_bm_nodes_hmcld ON bm_nodes (service_host, memory_mb, cpus, local_gb, deleted);
CREATE INDEX deploy_key_idx ON bm_nodes (deploy_key);
CREATE UNIQUE INDEX uuid_ux ON bm_nodes (uuid);

CREATE TABLE bm_interfaces (
  created_at  TIMESTAMP WITHOUT TIME ZONE NULL,
  updated_at  TIMESTAMP WITHOUT TIME ZONE NULL,
  deleted_at  TIMESTAMP WITHOUT TIME ZONE NULL,
  deleted     BOOLEAN NULL,
  id          SERIAL NOT NULL,
  bm_node_id  INT NULL,
  address     VARCHAR(255) NULL,
  datapath_id VARCHAR(255) NULL,
  port_no     INT NULL,
  vif_uuid    VARCHAR(36) NULL,
  PRIMARY KEY (id),
  CONSTRAINT bm_interfaces_address_key UNIQUE (address),
  CONSTRAINT bm_interfaces_vif_uuid_key UNIQUE (vif_uuid)
);
CREATE INDEX idx_bm_interfaces_bm_node_id_deleted ON bm_interfaces (bm_node_id, deleted);
