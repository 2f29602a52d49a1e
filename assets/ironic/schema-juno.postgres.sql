-- Ironic Juno (2014.2) schema at alembic head 487deb87cc9d, written from DOMAIN.md section 3 and
-- openstack-facts.md 2.1 (ironic/db/sqlalchemy/models.py @2014.2). A test fixture, not upstream code.
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);
INSERT INTO alembic_version (version_num) VALUES ('487deb87cc9d');
CREATE TABLE chassis (
  id SERIAL PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  extra TEXT NULL,
  description VARCHAR(255) NULL,
  created_at TIMESTAMP WITHOUT TIME ZONE NULL,
  updated_at TIMESTAMP WITHOUT TIME ZONE NULL,
  CONSTRAINT uniq_chassis0uuid UNIQUE (uuid)
);
CREATE TABLE conductors (
  id SERIAL PRIMARY KEY,
  hostname VARCHAR(255) NOT NULL,
  drivers TEXT NULL,
  online BOOLEAN NULL,
  created_at TIMESTAMP WITHOUT TIME ZONE NULL,
  updated_at TIMESTAMP WITHOUT TIME ZONE NULL,
  CONSTRAINT uniq_conductors0hostname UNIQUE (hostname)
);
CREATE TABLE nodes (
  id SERIAL PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  instance_uuid VARCHAR(36) NULL,
  chassis_id INTEGER NULL REFERENCES chassis (id),
  power_state VARCHAR(15) NULL,
  target_power_state VARCHAR(15) NULL,
  provision_state VARCHAR(15) NULL,
  target_provision_state VARCHAR(15) NULL,
  provision_updated_at TIMESTAMP WITHOUT TIME ZONE NULL,
  last_error TEXT NULL,
  instance_info TEXT NULL,
  properties TEXT NULL,
  driver VARCHAR(15) NULL,
  driver_info TEXT NULL,
  reservation VARCHAR(255) NULL,
  conductor_affinity INTEGER NULL REFERENCES conductors (id),
  maintenance BOOLEAN NULL,
  console_enabled BOOLEAN NULL,
  extra TEXT NULL,
  created_at TIMESTAMP WITHOUT TIME ZONE NULL,
  updated_at TIMESTAMP WITHOUT TIME ZONE NULL,
  CONSTRAINT uniq_nodes0uuid UNIQUE (uuid),
  CONSTRAINT uniq_nodes0instance_uuid UNIQUE (instance_uuid)
);
CREATE TABLE ports (
  id SERIAL PRIMARY KEY,
  uuid VARCHAR(36) NULL,
  address VARCHAR(18) NULL,
  node_id INTEGER NULL REFERENCES nodes (id),
  extra TEXT NULL,
  created_at TIMESTAMP WITHOUT TIME ZONE NULL,
  updated_at TIMESTAMP WITHOUT TIME ZONE NULL,
  CONSTRAINT uniq_ports0uuid UNIQUE (uuid),
  CONSTRAINT uniq_ports0address UNIQUE (address)
);
