-- nova_bm schema as left by nova baremetal's sqlalchemy-migrate repo after
-- versions 001..010 (Icehouse/Juno, repository_id 'nova_bm'). Held to what Juno's (2014.2)
-- `nova-baremetal-manage db sync` makes on MariaDB by tests/it/juno_baremetal.rs.
-- Booleans: SQLAlchemy Boolean -> TINYINT(1) with CHECK (col IN (0,1)) where the table is created
-- (001); preserve_ephemeral (010, ALTER TABLE ... ADD COLUMN) has no CHECK.
-- No foreign keys were created by the migrations.
CREATE TABLE migrate_version (
  repository_id   VARCHAR(250) NOT NULL PRIMARY KEY,
  repository_path TEXT,
  version         INT
);

CREATE TABLE bm_nodes (
  created_at         DATETIME NULL,
  updated_at         DATETIME NULL,
  deleted_at         DATETIME NULL,
  deleted            TINYINT(1) NULL,
  id                 INT NOT NULL AUTO_INCREMENT,
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
  preserve_ephemeral TINYINT(1) NULL DEFAULT false, -- 010
  PRIMARY KEY (id),
  CHECK (deleted IN (0,1))
) ENGINE=InnoDB;
CREATE INDEX idx_bm_nodes_service_host_deleted ON bm_nodes (service_host, deleted);
CREATE INDEX idx_bm_nodes_instance_uuid_deleted ON bm_nodes (instance_uuid, deleted);
CREATE INDEX idx_bm_nodes_hmcld ON bm_nodes (service_host, memory_mb, cpus, local_gb, deleted);
CREATE INDEX deploy_key_idx ON bm_nodes (deploy_key);
CREATE UNIQUE INDEX uuid_ux ON bm_nodes (uuid);

CREATE TABLE bm_interfaces (
  created_at  DATETIME NULL,
  updated_at  DATETIME NULL,
  deleted_at  DATETIME NULL,
  deleted     TINYINT(1) NULL,
  id          INT NOT NULL AUTO_INCREMENT,
  bm_node_id  INT NULL,
  address     VARCHAR(255) NULL,
  datapath_id VARCHAR(255) NULL,
  port_no     INT NULL,
  vif_uuid    VARCHAR(36) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY address (address),
  UNIQUE KEY vif_uuid (vif_uuid),
  CHECK (deleted IN (0,1))
) ENGINE=InnoDB;
CREATE INDEX idx_bm_interfaces_bm_node_id_deleted ON bm_interfaces (bm_node_id, deleted);
