-- Ironic 39.0.0 schema on SQLite, as `ironic-dbsync create_schema` builds it (alembic head 9fb44677ef15).
-- Generated from the real PyPI ironic==39.0.0 by scripts/ironic.sh + sqlite_master; used for SQLite targets (tests, demo).

CREATE TABLE chassis (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	extra TEXT, 
	description VARCHAR(255), 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_chassis0uuid UNIQUE (uuid)
);

CREATE TABLE conductors (
	id INTEGER NOT NULL, 
	hostname VARCHAR(255) NOT NULL, 
	drivers TEXT, 
	online BOOLEAN, 
	conductor_group VARCHAR(255) DEFAULT '' NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_conductors0hostname UNIQUE (hostname)
);

CREATE TABLE allocations (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36) NOT NULL, 
	name VARCHAR(255), 
	node_id INTEGER, 
	state VARCHAR(15) NOT NULL, 
	owner VARCHAR(255), 
	last_error TEXT, 
	resource_class VARCHAR(80), 
	traits TEXT, 
	candidate_nodes TEXT, 
	extra TEXT, 
	conductor_affinity INTEGER, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_allocations0name UNIQUE (name), 
	CONSTRAINT uniq_allocations0uuid UNIQUE (uuid)
);

CREATE TABLE deploy_templates (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	name VARCHAR(255) NOT NULL, 
	extra TEXT, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_deploytemplates0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_deploytemplates0name UNIQUE (name)
);

CREATE TABLE runbooks (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	name VARCHAR(255) NOT NULL, 
	description VARCHAR(255), 
	public BOOLEAN, 
	owner VARCHAR(255), 
	disable_ramdisk BOOLEAN, 
	extra TEXT, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_runbooks0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_runbooks0name UNIQUE (name)
);

CREATE TABLE inspection_rules (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36) NOT NULL, 
	priority INTEGER NOT NULL, 
	description VARCHAR(255), 
	scope VARCHAR(255), 
	sensitive BOOLEAN, 
	phase VARCHAR(16), 
	conditions TEXT, 
	actions TEXT NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_inspection_rules0uuid UNIQUE (uuid)
);

CREATE TABLE conductor_hardware_interfaces (
	id INTEGER NOT NULL, 
	conductor_id INTEGER NOT NULL, 
	hardware_type VARCHAR(255) NOT NULL, 
	interface_type VARCHAR(16) NOT NULL, 
	interface_name VARCHAR(255) NOT NULL, 
	"default" BOOLEAN NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_conductorhardwareinterfaces0 UNIQUE (conductor_id, hardware_type, interface_type, interface_name), 
	FOREIGN KEY(conductor_id) REFERENCES conductors (id)
);

CREATE TABLE nodes (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	instance_uuid VARCHAR(36), 
	instance_name VARCHAR(255), 
	name VARCHAR(255), 
	chassis_id INTEGER, 
	power_state VARCHAR(15), 
	target_power_state VARCHAR(15), 
	provision_state VARCHAR(15), 
	target_provision_state VARCHAR(15), 
	provision_updated_at DATETIME, 
	last_error TEXT, 
	instance_info TEXT, 
	properties TEXT, 
	driver VARCHAR(255), 
	driver_info TEXT, 
	driver_internal_info TEXT, 
	clean_step TEXT, 
	deploy_step TEXT, 
	resource_class VARCHAR(80), 
	raid_config TEXT, 
	target_raid_config TEXT, 
	reservation VARCHAR(255), 
	conductor_affinity INTEGER, 
	conductor_group VARCHAR(255) DEFAULT '' NOT NULL, 
	maintenance BOOLEAN, 
	maintenance_reason TEXT, 
	fault VARCHAR(255), 
	console_enabled BOOLEAN, 
	inspection_finished_at DATETIME, 
	inspection_started_at DATETIME, 
	extra TEXT, 
	automated_clean BOOLEAN, 
	protected BOOLEAN DEFAULT 0 NOT NULL, 
	protected_reason TEXT, 
	owner VARCHAR(255), 
	lessee VARCHAR(255), 
	allocation_id INTEGER, 
	description TEXT, 
	bios_interface VARCHAR(255), 
	boot_interface VARCHAR(255), 
	console_interface VARCHAR(255), 
	deploy_interface VARCHAR(255), 
	firmware_interface VARCHAR(255), 
	inspect_interface VARCHAR(255), 
	management_interface VARCHAR(255), 
	network_interface VARCHAR(255), 
	raid_interface VARCHAR(255), 
	rescue_interface VARCHAR(255), 
	retired BOOLEAN DEFAULT 0, 
	retired_reason TEXT, 
	network_data TEXT, 
	storage_interface VARCHAR(255), 
	power_interface VARCHAR(255), 
	vendor_interface VARCHAR(255), 
	boot_mode VARCHAR(16), 
	secure_boot BOOLEAN, 
	shard VARCHAR(255), 
	parent_node VARCHAR(36), 
	service_step TEXT, 
	disable_power_off BOOLEAN DEFAULT 0, 
	health VARCHAR(32), 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_nodes0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_nodes0instance_uuid UNIQUE (instance_uuid), 
	CONSTRAINT uniq_nodes0name UNIQUE (name), 
	FOREIGN KEY(chassis_id) REFERENCES chassis (id), 
	CONSTRAINT nodes_conductor_affinity_fk FOREIGN KEY(conductor_affinity) REFERENCES conductors (id), 
	FOREIGN KEY(allocation_id) REFERENCES allocations (id)
);

CREATE TABLE deploy_template_steps (
	id INTEGER NOT NULL, 
	deploy_template_id INTEGER NOT NULL, 
	interface VARCHAR(255) NOT NULL, 
	step VARCHAR(255) NOT NULL, 
	args TEXT NOT NULL, 
	priority INTEGER NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	FOREIGN KEY(deploy_template_id) REFERENCES deploy_templates (id)
);

CREATE TABLE runbook_steps (
	id INTEGER NOT NULL, 
	runbook_id INTEGER NOT NULL, 
	interface VARCHAR(255) NOT NULL, 
	step VARCHAR(255) NOT NULL, 
	args TEXT NOT NULL, 
	"order" INTEGER NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	FOREIGN KEY(runbook_id) REFERENCES runbooks (id)
);

CREATE TABLE runbook_traits (
	runbook_id INTEGER NOT NULL, 
	trait VARCHAR(255) NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (runbook_id, trait), 
	FOREIGN KEY(runbook_id) REFERENCES runbooks (id)
);

CREATE TABLE portgroups (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	name VARCHAR(255), 
	node_id INTEGER, 
	address VARCHAR(18), 
	extra TEXT, 
	internal_info TEXT, 
	standalone_ports_supported BOOLEAN, 
	mode VARCHAR(255), 
	properties TEXT, 
	physical_network VARCHAR(64), 
	category VARCHAR(80), 
	dynamic_portgroup BOOLEAN, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_portgroups0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_portgroups0address UNIQUE (address), 
	CONSTRAINT uniq_portgroups0name UNIQUE (name), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE node_tags (
	node_id INTEGER NOT NULL, 
	tag VARCHAR(255) NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (node_id, tag), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE volume_connectors (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	node_id INTEGER, 
	type VARCHAR(32), 
	connector_id VARCHAR(255), 
	extra TEXT, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_volumeconnectors0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_volumeconnectors0type0connector_id UNIQUE (type, connector_id), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE volume_targets (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	node_id INTEGER, 
	volume_type VARCHAR(64), 
	properties TEXT, 
	boot_index INTEGER, 
	volume_id VARCHAR(36), 
	extra TEXT, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_volumetargets0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_volumetargets0node_id0boot_index UNIQUE (node_id, boot_index), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE node_traits (
	node_id INTEGER NOT NULL, 
	trait VARCHAR(255) NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (node_id, trait), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE bios_settings (
	node_id INTEGER NOT NULL, 
	name VARCHAR(255) NOT NULL, 
	value TEXT, 
	attribute_type VARCHAR(255), 
	allowable_values TEXT, 
	lower_bound BIGINT, 
	max_length INTEGER, 
	min_length INTEGER, 
	read_only BOOLEAN, 
	reset_required BOOLEAN, 
	"unique" BOOLEAN, 
	upper_bound BIGINT, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (node_id, name), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE node_history (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36) NOT NULL, 
	conductor VARCHAR(255), 
	event_type VARCHAR(255), 
	severity VARCHAR(255), 
	event TEXT, 
	user VARCHAR(64), 
	project VARCHAR(80), 
	node_id INTEGER, 
	state VARCHAR(255), 
	target_provision_state VARCHAR(255), 
	duration_seconds INTEGER, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_history0uuid UNIQUE (uuid), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE node_inventory (
	id INTEGER NOT NULL, 
	inventory_data TEXT, 
	plugin_data TEXT, 
	node_id INTEGER, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE firmware_information (
	id INTEGER NOT NULL, 
	node_id INTEGER NOT NULL, 
	component VARCHAR(255) NOT NULL, 
	initial_version VARCHAR(255) NOT NULL, 
	current_version VARCHAR(255), 
	last_version_flashed VARCHAR(255), 
	vendor VARCHAR(255), 
	model VARCHAR(255), 
	serial_number VARCHAR(255), 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_nodecomponent0node_id0component UNIQUE (node_id, component), 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE ports (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36), 
	address VARCHAR(18), 
	node_id INTEGER, 
	extra TEXT, 
	local_link_connection TEXT, 
	portgroup_id INTEGER, 
	pxe_enabled BOOLEAN, 
	internal_info TEXT, 
	physical_network VARCHAR(64), 
	is_smartnic BOOLEAN, 
	name VARCHAR(255), 
	description VARCHAR(255), 
	vendor VARCHAR(32), 
	category VARCHAR(80), 
	available_for_dynamic_portgroup BOOLEAN DEFAULT 1 NOT NULL, 
	version VARCHAR(15), 
	created_at DATETIME, 
	updated_at DATETIME, 
	PRIMARY KEY (id), 
	CONSTRAINT uniq_ports0address UNIQUE (address), 
	CONSTRAINT uniq_ports0uuid UNIQUE (uuid), 
	CONSTRAINT uniq_ports0name UNIQUE (name), 
	FOREIGN KEY(node_id) REFERENCES nodes (id), 
	FOREIGN KEY(portgroup_id) REFERENCES portgroups (id)
);

CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

CREATE INDEX inspection_rule_phase_idx ON inspection_rules (phase);

CREATE INDEX inspection_rule_scope_idx ON inspection_rules (scope);

CREATE INDEX provision_state_idx ON nodes (provision_state);

CREATE INDEX owner_idx ON nodes (owner);

CREATE INDEX conductor_group_idx ON nodes (conductor_group);

CREATE INDEX shard_idx ON nodes (shard);

CREATE INDEX lessee_idx ON nodes (lessee);

CREATE INDEX driver_idx ON nodes (driver);

CREATE INDEX reservation_idx ON nodes (reservation);

CREATE INDEX resource_class_idx ON nodes (resource_class);

CREATE INDEX parent_node_idx ON nodes (parent_node);

CREATE INDEX deploy_template_steps_interface_idx ON deploy_template_steps (interface);

CREATE INDEX deploy_template_steps_step_idx ON deploy_template_steps (step);

CREATE INDEX deploy_template_id ON deploy_template_steps (deploy_template_id);

CREATE INDEX runbook_id ON runbook_steps (runbook_id);

CREATE INDEX runbook_steps_step_idx ON runbook_steps (step);

CREATE INDEX runbook_steps_interface_idx ON runbook_steps (interface);

CREATE INDEX runbook_traits_idx ON runbook_traits (trait);

CREATE INDEX node_tags_idx ON node_tags (tag);

CREATE INDEX node_traits_idx ON node_traits (trait);

CREATE INDEX history_uuid_idx ON node_history (uuid);

CREATE INDEX history_node_id_idx ON node_history (node_id);

CREATE INDEX history_conductor_idx ON node_history (conductor);

CREATE INDEX inventory_node_id_idx ON node_inventory (node_id);

INSERT INTO alembic_version (version_num) VALUES ('9fb44677ef15');
