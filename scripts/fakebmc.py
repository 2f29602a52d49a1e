#!/usr/bin/env python3
"""Fake IPMI BMC on loopback only (PyPI pyghmi), for the takeover and boot tests.

Usage: fakebmc.py PORT [USER PASS [ADDR [on|off]]] [--vm DIR --disk FILE --tftp DIR --mac MAC [--accel kvm|tcg]
                   [--memory MIB] [--disk-size GIB] [--hostfwd PORT:GUESTPORT]... [--reach-host]]
(ADDR: a loopback address, 127.0.0.1 by default; tests that need port 623 each take their own 127.0.0.x;
the last argument: the machine's power state at start, off by default)
Run with the Ironic test venv (scripts/ironic.sh installs pyghmi there). Prints "power on" / "power off"
when Ironic changes the power state, so a test can prove a stopped machine was not powered on, and
"ipmi NAME" for every IPMI command a session sends it (`ipmi get-chassis-status`, `ipmi chassis-control
power-on`, ...; `COMMANDS` names them, others print as `ipmi netfn=0xNN cmd=0xNN`), so a test can prove
what a client asked (bm2ironic's BMC check: only reads, issue #51).

Without --vm the machine is a power state only. With --vm the machine is a real QEMU virtual machine
(scripts/bootvm.sh builds its parts) that the IPMI power actions drive:
  power on     starts QEMU (a new process: a cold boot from the boot device set last)
  power off    QMP `quit` (the plug pulled), the process killed if it lingers
  power soft   QMP `system_powerdown` (the ACPI power button: the guest decides)
  power reset  QMP `system_reset` (a warm reset of the running machine)
  power cycle  off, then on (a new process, as `power on`)
  power status on while the QEMU process runs
  bootdev      remembered, used at the next power on/cycle: pxe (and default) -> `-boot order=n`
               (the network first, then the disk, as nova baremetal's machines were set), disk -> order=c
The machine's NIC has MAC, and QEMU's user-mode network (restricted: nothing leaves QEMU) answers its
DHCP and serves TFTP from the --tftp DIR with the boot file pxelinux.0. The serial console goes to
DIR/console.log, appended across power cycles; QEMU's own messages and each command line to
DIR/qemu.log; its QMP socket is DIR/qmp.sock. QEMU dies with this BMC.

For a machine that runs a deploy (ironic-python-agent, scripts/ipa-ramdisk.sh; #46):
  --memory MIB       its memory (256 by default; the agent needs about 1536)
  --disk-size GIB    the disk grown (sparse) to at least this size at start (the agent ignores disks
                     under 4 GiB unless given a root device hint)
  --hostfwd P:G      127.0.0.1:P on this host forwarded to the guest's port G (the agent's API, which
                     the conductor calls); repeatable. Host side on loopback only.
  --reach-host       the user network unrestricted, so the guest reaches this host's loopback at
                     10.0.2.2 (the agent calls Ironic's API and fetches the image there); without it
                     the guest reaches nothing outside QEMU
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

import uuid

import pyghmi.ipmi.bmc as bmc
import pyghmi.ipmi.private.serversession as serversession

# IPMI completion code: "command not supported in present state" (a reset of a machine that is off)
NOT_IN_PRESENT_STATE = 0xd5

# (netfn, cmd) -> the name printed for it (IPMI 2.0 tables G-1 and 28-x); chassis control adds its action
COMMANDS = {
    (6, 0x01): 'get-device-id', (6, 0x02): 'cold-reset', (6, 0x08): 'get-device-guid',
    (6, 0x37): 'get-system-guid', (6, 0x3b): 'set-session-privilege', (6, 0x3c): 'close-session',
    (6, 0x48): 'activate-payload', (6, 0x49): 'deactivate-payload',
    (0, 0x01): 'get-chassis-status', (0, 0x02): 'chassis-control', (0, 0x04): 'chassis-identify',
    (0, 0x08): 'set-boot-options', (0, 0x09): 'get-boot-options',
    (0x2c, 0x00): 'get-picmg-properties', (0x2c, 0x3e): 'get-vso-capabilities',
}
CHASSIS_CONTROL = {0: 'power-off', 1: 'power-on', 2: 'power-cycle', 3: 'power-reset', 4: 'diag', 5: 'power-soft'}


def command_name(request):
    netfn, cmd = request['netfn'], request['command']
    name = COMMANDS.get((netfn, cmd), 'netfn=0x%02x cmd=0x%02x' % (netfn, cmd))
    if (netfn, cmd) == (0, 0x02):
        data = request.get('data') or [None]
        name += ' ' + CHASSIS_CONTROL.get(data[0], 'unknown')
    return name


_handle_client_request = serversession.ServerSession.handle_client_request


def _logged_client_request(session, request):
    """Every command a session sends, printed before pyghmi answers it (the session's own ones too:
    privilege, close)."""
    announce = getattr(session.bmc, 'announce', None)
    if announce is not None:
        announce('ipmi ' + command_name(request))
    cap = getattr(session.bmc, 'max_privilege', None)
    if cap is not None and (request['netfn'], request['command']) == (6, 0x3b):
        # pyghmi grants what RAKP 1 asked for; a BMC whose user is only an OPERATOR (3) refuses more
        session.maxpriv = min(session.maxpriv, cap)
        if not hasattr(session, 'clientpriv'):
            session.clientpriv = cap  # pyghmi reports it in the refusal, and has none before a grant
    return _handle_client_request(session, request)


serversession.ServerSession.handle_client_request = _logged_client_request


class LoopbackBmc(bmc.Bmc):
    """A machine that is a power state only. `name`: printed after each power change (fakebmcs.py
    serves many BMCs from one process and names each by its address)."""

    def __init__(self, authdata, port, addr='127.0.0.1', power='off', name=None, guid=None, max_privilege=None):
        if not addr.startswith('127.'):
            raise SystemExit('fakebmc.py: loopback addresses only (127.x.x.x), not ' + addr)
        # '::ffff:127.0.0.1' = IPv4 loopback on pyghmi's dual-stack UDP socket
        super().__init__(authdata, port, address='::ffff:' + addr)
        self.powerstate = power
        self.bootdevice = 'default'
        self.addr = addr
        self.name = name
        # the system GUID (`ipmitool mc guid`): random unless given (two BMCs given one are one machine)
        self.guid = uuid.UUID(guid) if guid else uuid.uuid4()
        # the highest session privilege its user gets (None: whatever is asked; 3: OPERATOR)
        self.max_privilege = max_privilege

    def announce(self, what):
        print(what if self.name is None else what + ' ' + self.name, flush=True)

    def get_boot_device(self):
        return self.bootdevice

    def get_system_guid(self):
        return self.guid

    def set_boot_device(self, bootdevice):
        self.bootdevice = bootdevice

    def cold_reset(self):
        pass

    def get_power_state(self):
        return self.powerstate

    def power_off(self):
        self.powerstate = 'off'
        self.announce('power off')

    def power_on(self):
        self.powerstate = 'on'
        self.announce('power on')

    def power_reset(self):
        pass

    def power_shutdown(self):
        self.powerstate = 'off'

    def is_active(self):
        return self.powerstate == 'on'


def die_with_parent():
    """In the QEMU child: SIGKILL when the BMC process dies, however it dies."""
    libc = ctypes.CDLL('libc.so.6', use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class QemuBmc(LoopbackBmc):
    """The machine is a QEMU VM: IPMI power actions start, stop and reset it (see the module doc)."""

    def __init__(self, authdata, port, addr, power, vm):
        super().__init__(authdata, port, addr, 'off')
        self.vm = vm
        self.dir = os.path.abspath(vm.vm)
        os.makedirs(self.dir, exist_ok=True)
        self.qmp_path = os.path.join(self.dir, 'qmp.sock')
        self.proc = None
        if vm.disk_size and os.path.getsize(vm.disk) < vm.disk_size << 30:
            os.truncate(vm.disk, vm.disk_size << 30)  # sparse: the blocks stay unallocated
        if power == 'on':
            self.start()

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def command(self):
        order = 'c' if self.bootdevice == 'hd' else 'n'
        accel = ['-accel', 'kvm', '-cpu', 'host'] if self.vm.accel == 'kvm' else ['-accel', 'tcg']
        # the loader and everything it reads over HTTP when the PXE tree is served so (--boot-http):
        # the NIC's iPXE fetches pxelinux.0 from the URL, and pxelinux reads its config, kernel and
        # initrd relative to it through iPXE (TFTP lock-step crawls under TCG on a loaded host)
        bootfile = 'pxelinux.0'
        if self.vm.boot_http:
            bootfile = 'http://10.0.2.2:%d/pxelinux.0' % self.vm.boot_http
        net = 'user,id=n0,restrict=%s,tftp=%s,bootfile=%s' % (
            'off' if self.vm.reach_host else 'on', os.path.abspath(self.vm.tftp), bootfile)
        for fwd in self.vm.hostfwd:
            host, guest = fwd.split(':')
            net += ',hostfwd=tcp:127.0.0.1:%d-:%d' % (int(host), int(guest))
        return [
            'qemu-system-x86_64', '-name', 'bm2ironic-' + self.vm.mac,
            *accel, '-m', str(self.vm.memory), '-nographic', '-monitor', 'none',
            '-netdev', net,
            '-device', 'virtio-net-pci,netdev=n0,mac=' + self.vm.mac,
            '-drive', 'file=%s,if=virtio,format=raw' % os.path.abspath(self.vm.disk),
            '-boot', 'order=' + order,
            '-chardev', 'file,id=console,append=on,path=' + os.path.join(self.dir, 'console.log'),
            '-serial', 'chardev:console',
            '-qmp', 'unix:%s,server=on,wait=off' % self.qmp_path,
        ]

    def start(self):
        if os.path.exists(self.qmp_path):
            os.unlink(self.qmp_path)
        cmd = self.command()
        with open(os.path.join(self.dir, 'qemu.log'), 'a') as log:
            log.write('# %s\n' % ' '.join(cmd))
            log.flush()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         preexec_fn=die_with_parent)
        self.powerstate = 'on'

    def qmp(self, execute):
        """One QMP command on a fresh connection; its `return` (or None when QEMU is gone)."""
        deadline = time.time() + 5
        while not os.path.exists(self.qmp_path):
            if not self.running() or time.time() > deadline:
                return None
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(self.qmp_path)
            f = s.makefile('rwb')
            f.readline()  # the greeting
            for cmd in ('qmp_capabilities', execute):
                f.write(json.dumps({'execute': cmd}).encode() + b'\n')
                f.flush()
                while True:
                    line = f.readline()
                    if not line:
                        return None
                    msg = json.loads(line)
                    if 'return' in msg or 'error' in msg:
                        break   # events (`{"event": ...}`) are skipped
            return msg.get('return', msg.get('error'))
        except OSError:
            return None
        finally:
            s.close()

    def stop(self):
        if self.running():
            self.qmp('quit')
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.powerstate = 'off'

    def get_power_state(self):
        return 'on' if self.running() else 'off'

    def is_active(self):
        return self.running()

    def power_on(self):
        if not self.running():
            self.start()
        print('power on', flush=True)

    def power_off(self):
        self.stop()
        print('power off', flush=True)

    def power_shutdown(self):
        if not self.running():
            return NOT_IN_PRESENT_STATE
        self.qmp('system_powerdown')
        print('power soft', flush=True)

    def power_reset(self):
        if not self.running():
            return NOT_IN_PRESENT_STATE
        self.qmp('system_reset')
        print('power reset', flush=True)

    def power_cycle(self):
        if not self.running():
            return NOT_IN_PRESENT_STATE
        self.stop()
        time.sleep(0.2)
        self.start()
        print('power cycle', flush=True)


def main():
    p = argparse.ArgumentParser(description='fake IPMI BMC on a loopback address')
    p.add_argument('port', nargs='?', type=int, default=6230)
    p.add_argument('user', nargs='?', default='admin')
    p.add_argument('password', nargs='?', default='password')
    p.add_argument('addr', nargs='?', default='127.0.0.1')
    p.add_argument('power', nargs='?', default='off')
    p.add_argument('--guid', help='the system GUID it answers (random by default)')
    p.add_argument('--vm', metavar='DIR', help='drive a QEMU VM (its files in DIR) instead of a power state')
    p.add_argument('--disk', help='the VM disk (raw)')
    p.add_argument('--tftp', help='the TFTP root its PXE boot reads')
    p.add_argument('--mac', help="the VM NIC's MAC")
    p.add_argument('--accel', default='tcg', choices=['kvm', 'tcg'])
    p.add_argument('--memory', type=int, default=256, help='MiB')
    p.add_argument('--disk-size', type=int, default=0, help='GiB, the disk grown (sparse) to it')
    p.add_argument('--hostfwd', action='append', default=[], metavar='PORT:GUESTPORT',
                   help='127.0.0.1:PORT forwarded to the guest port')
    p.add_argument('--reach-host', action='store_true', help="the guest reaches this host's loopback at 10.0.2.2")
    p.add_argument('--boot-http', type=int, metavar='PORT',
                   help='the PXE tree served over HTTP on 127.0.0.1:PORT (needs --reach-host): the VM boots from it')
    a = p.parse_args()
    for fwd in a.hostfwd:
        parts = fwd.split(':')
        if len(parts) != 2 or not all(x.isdigit() for x in parts):
            raise SystemExit('fakebmc.py: --hostfwd is PORT:GUESTPORT (numbers), not ' + fwd)
    if a.boot_http and not a.reach_host:
        raise SystemExit('fakebmc.py: --boot-http needs --reach-host (the guest reaches it at 10.0.2.2)')
    if a.power not in ('on', 'off'):
        raise SystemExit('fakebmc.py: the power state is on or off, not ' + a.power)
    if a.vm is None:
        machine = LoopbackBmc({a.user: a.password}, a.port, a.addr, a.power, guid=a.guid)
    else:
        if not (a.disk and a.tftp and a.mac):
            raise SystemExit('fakebmc.py: --vm needs --disk, --tftp and --mac')
        machine = QemuBmc({a.user: a.password}, a.port, a.addr, a.power, a)

    # pyghmi's loop swallows SIGTERM otherwise; exit at once on TERM/INT (QEMU with us)
    def bye(*_):
        if isinstance(machine, QemuBmc) and machine.running():
            machine.proc.kill()
        os._exit(0)
    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    machine.listen()


if __name__ == '__main__':
    main()
