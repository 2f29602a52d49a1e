# The Juno (2014.2) Nova control plane in ONE process, for the tests (scripts/juno.sh nova-all CONF):
# nova-api (osapi_compute), nova-conductor, nova-scheduler and nova-compute, each Juno's own service
# class (nova.service.WSGIService / nova.service.Service.create) started as Juno's `nova-all`
# (nova/cmd/all.py) starts them, but on a ServiceLauncher (green threads of this one process) and not
# Juno's ProcessLauncher: nova-all forks a child per service, and oslo.messaging's `fake` transport
# (rpc_backend = fake, no broker) carries messages only inside one process. Here the API's casts reach
# the conductor, the conductor's calls the scheduler, the scheduler's and conductor's casts the
# compute manager, as a broker would carry them between processes. nova-network runs too (the
# nova.conf's network_manager; the tests use FlatManager, which needs no root): without Neutron it is
# what answers nova-compute's network calls (an instance's network info at `nova start`, its
# addresses at `nova boot`). nova-all's other services (nova-cert, the EC2 and metadata APIs,
# s3server, xvp proxy) are not started: nothing here needs them.
import nova.cmd  # noqa: eventlet's monkey patching (os=False), as every nova-* command gets it

import os
import sys

from oslo.config import cfg

from nova import config
from nova import objects
from nova.openstack.common import log as logging
from nova.openstack.common import service as os_service
from nova import service
from nova import utils

# The fake driver checks each message with the standard json module, stricter than the broker drivers,
# which send with oslo.messaging's jsonutils (a datetime becomes a string): Juno's API casts
# build_instances with the flavor's row (its created_at a datetime), which a broker carries and the fake
# refused (`nova boot` answered 400). Check as they send (as scripts/juno.sh does for Ironic).
from oslo.messaging._drivers import impl_fake
from oslo.messaging.openstack.common import jsonutils
impl_fake.FakeDriver._check_serialize = staticmethod(jsonutils.dumps)

# BM2_JUNO_PERIODIC_DEFAULT (seconds): how often the periodic tasks without a spacing of their own run
# (Juno's DEFAULT_INTERVAL, 60 s; the resource tracker's update_available_resource is one), set before
# any manager class is made; a test machine's setting, as the short intervals in its nova.conf are
from nova.openstack.common import periodic_task
if os.environ.get('BM2_JUNO_PERIODIC_DEFAULT'):
    periodic_task.DEFAULT_INTERVAL = int(os.environ['BM2_JUNO_PERIODIC_DEFAULT'])

CONF = cfg.CONF
CONF.import_opt('manager', 'nova.conductor.api', group='conductor')
CONF.import_opt('topic', 'nova.conductor.api', group='conductor')
CONF.import_opt('compute_topic', 'nova.compute.rpcapi')


def main():
    config.parse_args(sys.argv)
    logging.setup('nova')
    log = logging.getLogger('nova.all')
    utils.monkey_patch()
    objects.register_all()
    launcher = os_service.ServiceLauncher()
    api = service.WSGIService('osapi_compute')
    launcher.launch_service(api)
    log.info('bm2ironic nova-all: osapi_compute on %s:%s', api.host, api.port)
    for binary, topic, manager in [
            ('nova-conductor', CONF.conductor.topic, CONF.conductor.manager),
            ('nova-scheduler', None, None),
            ('nova-network', None, None),
            ('nova-compute', CONF.compute_topic, None)]:
        launcher.launch_service(service.Service.create(binary=binary, topic=topic, manager=manager))
        log.info('bm2ironic nova-all: %s started', binary)
    launcher.wait()


if __name__ == '__main__':
    main()
