# nova baremetal's deploy helper (Juno 2014.2's `nova-baremetal-deploy-helper`, nova/cmd/
# baremetal_deploy_helper.py) for the test where nova baremetal deploys instances onto QEMU machines
# (#45, tests/it/juno_baremetal/deployed.rs; docs/juno.md, "nova baremetal itself"):
#   scripts/juno.sh deploy-helper CONF PORT
# Juno's own code takes the deploy ramdisk's POST (`i k a n`), checks the deployment key against nova_bm,
# sets DEPLOYING, runs Juno's `deploy()` and sets DEPLOYDONE (or DEPLOYFAIL). Inside `deploy()` only the
# parts that need a disk over iSCSI are replaced, and nothing else:
#   - `discovery`, `login_iscsi`, `logout_iscsi` (iscsiadm: this host's kernel has no iSCSI initiator) do
#     nothing but log what Juno would have run;
#   - `work_on_disk` (partitioning, dd of the image, mkswap: onto the iSCSI disk) writes nothing and returns
#     the root file system's uuid of the machine's disk, $BM2_STUB_ROOT_UUID (scripts/bootvm.sh's disk);
#   - `notify` (a TCP connect to the ramdisk's port 10000 at the address it posted, the guest's 10.0.2.x,
#     which the host never dials) logs instead; the ramdisk reboots once its PXE config says `default boot`.
# Juno's `switch_pxe_config`, `get_image_mb`, `get_dev` and the 3 s wait run as Juno wrote them. Juno's
# main() binds 0.0.0.0:10000; this binds 127.0.0.1:PORT (QEMU's user network maps the guest's 10.0.2.2 to
# it), logs to CONF's log_file and reads nova_bm from its [baremetal] sql_connection.
import nova.cmd  # noqa: eventlet's monkey patching, as Juno's nova-baremetal-deploy-helper gets it

import os
import sys
from wsgiref import simple_server

from nova.cmd import baremetal_deploy_helper as helper
from nova import config
from nova import objects
from nova.openstack.common import log as logging

ROOT_UUID = os.environ['BM2_STUB_ROOT_UUID']


def stub(name, result=None):
    def f(*args, **kwargs):
        helper.LOG.info('bm2ironic stub: %s%r not run (no iSCSI on this host)', name, args)
        return result
    return f


def work_on_disk(dev, root_mb, swap_mb, ephemeral_mb, image_path, preserve_ephemeral):
    helper.LOG.info('bm2ironic stub: work_on_disk(%s, root %s MB, swap %s MB, ephemeral %s MB, %s) '
                    'not run; the root is %s', dev, root_mb, swap_mb, ephemeral_mb, image_path, ROOT_UUID)
    return ROOT_UUID


def main():
    port = int(sys.argv.pop())
    config.parse_args(sys.argv)
    logging.setup('nova')
    helper.LOG = logging.getLogger('nova.virt.baremetal.deploy_helper')
    objects.register_all()
    helper.discovery = stub('discovery')
    helper.login_iscsi = stub('login_iscsi')
    helper.logout_iscsi = stub('logout_iscsi')
    helper.work_on_disk = work_on_disk
    helper.notify = stub('notify')
    app = helper.BareMetalDeploy()
    srv = simple_server.make_server('127.0.0.1', port, app)
    helper.LOG.info('bm2ironic deploy helper on 127.0.0.1:%d', port)
    srv.serve_forever()


if __name__ == '__main__':
    main()
