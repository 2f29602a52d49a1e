#!/usr/bin/env python
# conf-check.py KIND FILE SECTION.OPTION...
#
# Loads FILE with the target release's own oslo.config, after importing the modules of that release
# that register the options, and checks that every SECTION.OPTION named is one the release knows and
# that its value loads (type conversion by the release's own option types). For keystoneauth
# sections (auth_type set), the plugin's options are registered the way the release loads them.
# KIND: juno-nova | juno-ironic | nova | ironic.  Runs on Python 2.7 (Juno) and 3.
# Prints one line per option ("ok", "UNKNOWN" or "BAD VALUE"); exit 1 when any is not ok,
# 2 on a usage error, 3 when the release's modules cannot be imported.
from __future__ import print_function

import importlib
import sys

MODULES = {
    # Nova 2014.2: the modules that register the options bm2ironic config writes
    "juno-nova": [
        "nova.netconf", "nova.service", "nova.virt.driver", "nova.virt.firewall",
        "nova.virt.ironic.driver", "nova.compute.resource_tracker", "nova.compute.manager",
        "nova.scheduler.host_manager", "nova.scheduler.ironic_host_manager",
        "nova.scheduler.filters.ram_filter", "nova.image.glance", "nova.network.neutronv2.api",
        "nova.db.sqlalchemy.api", "nova.conductor.api",
    ],
    # Ironic 2014.2
    "juno-ironic": [
        "ironic.common.service", "ironic.common.driver_factory", "ironic.api.app",
        "ironic.conductor.manager", "ironic.drivers.modules.pxe",
        "ironic.drivers.modules.iscsi_deploy", "ironic.common.image_service",
        "ironic.dhcp.neutron", "ironic.db.sqlalchemy.models", "keystonemiddleware.auth_token",
    ],
    "nova": ["nova.conf"],
    "ironic": ["ironic.conf", "ironic.db.sqlalchemy.api", "keystonemiddleware.auth_token"],
}
# class paths among the values: each must import in the release (a typo in a driver name is as
# fatal as an unknown option)
CLASS_OPTIONS = {
    "juno-nova": {("DEFAULT", "compute_driver"), ("DEFAULT", "compute_manager"), ("DEFAULT", "scheduler_host_manager"),
                  ("DEFAULT", "firewall_driver")},
}


def main(argv):
    if len(argv) < 3 or argv[0] not in MODULES:
        print(__doc__ or "usage: conf-check.py KIND FILE SECTION.OPTION...", file=sys.stderr)
        return 2
    kind, path, wanted = argv[0], argv[1], argv[2:]
    if kind.startswith("juno"):
        from oslo.config import cfg
    else:
        from oslo_config import cfg
    for m in MODULES[kind]:
        try:
            importlib.import_module(m)
        except Exception as e:  # the release itself is broken: not a verdict on the file
            print("cannot import %s: %r" % (m, e), file=sys.stderr)
            return 3
    conf = cfg.CONF
    if kind == "nova":
        import nova.conf
        conf = nova.conf.CONF
    elif kind == "ironic":
        from ironic.conf import CONF as conf  # noqa: N811
    conf(args=[], default_config_files=[path])
    if kind in ("nova", "ironic"):
        from keystoneauth1 import loading as ks_loading
        for group in sorted(set(w.split(".", 1)[0] for w in wanted)):
            if group == "DEFAULT":
                continue
            try:
                ks_loading.register_auth_conf_options(conf, group)
                if getattr(conf[group], "auth_type", None):
                    ks_loading.load_auth_from_conf_options(conf, group)
            except Exception as e:
                print("BAD VALUE %s: auth plugin: %r" % (group, e))
                return 1
    bad = 0
    for w in wanted:
        group, _, name = w.partition(".")
        g = None if group == "DEFAULT" else group
        try:
            conf._get_opt_info(name, g)
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            print("UNKNOWN %s" % w)
            bad += 1
            continue
        try:
            value = getattr(conf, name) if g is None else getattr(getattr(conf, g), name)
        except Exception as e:
            print("BAD VALUE %s: %r" % (w, e))
            bad += 1
            continue
        if (group, name) in CLASS_OPTIONS.get(kind, ()):
            try:
                from nova.openstack.common import importutils
                try:
                    importutils.import_class(value)
                except ImportError:
                    if name != "compute_driver":
                        raise
                    # nova.virt.driver.load_compute_driver: 'nova.virt.' + name first, then name
                    importutils.import_class("nova.virt." + value)
            except Exception as e:
                print("BAD VALUE %s: %s does not import: %r" % (w, value, e))
                bad += 1
                continue
        print("ok %s" % w)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
