-- Ironic Juno (2014.2) schema at alembic head 487deb87cc9d on MariaDB, as Juno's own `ironic-dbsync
-- upgrade` makes it (scripts/juno.sh): tests/it/juno.rs checks that it still is (columns, indexes,
-- keys, checks, engine and charset). A test fixture, not upstream code.
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);
INSERT INTO alembic_version (version_num) VALUES ('487deb87cc9d');
CREATE TABLE chassis (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  extra TEXT NULL,
  description VARCHAR(255) NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_chassis0uuid UNIQUE (uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE conductors (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  hostname VARCHAR(255) NOT NULL,
  drivers TEXT NULL,
  online TINYINT(1) NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_conductors0hostname UNIQUE (hostname),
  CHECK (online IN (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE nodes (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
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
  conductor_affinity INTEGER NULL,
  maintenance TINYINT(1) NULL,
  console_enabled TINYINT(1) NULL,
  extra TEXT NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_nodes0uuid UNIQUE (uuid),
  CONSTRAINT uniq_nodes0instance_uuid UNIQUE (instance_uuid),
  CONSTRAINT nodes_conductor_affinity_fk FOREIGN KEY (conductor_affinity) REFERENCES conductors (id),
  CHECK (maintenance IN (0,1)),
  CHECK (console_enabled IN (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE ports (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  address VARCHAR(18) NULL,
  node_id INTEGER NULL REFERENCES nodes (id),
  extra TEXT NULL,
  created_at DATETIME NULL,
  updated_at DATETIME NULL,
  CONSTRAINT uniq_ports0uuid UNIQUE (uuid),
  CONSTRAINT uniq_ports0address UNIQUE (address)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
